"""One delivery, start to finish, through the middlewares every worker runs:
decode → span → route → inbox → handle → outcome.

The pipeline is transport-agnostic: it turns a :class:`Delivery` into an :class:`Outcome`
and never raises for a bad message or a failed handler. Only cancellation (shutdown)
escapes, leaving the message unacknowledged so that it is delivered again.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import structlog
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from shop.messaging.breaker import CircuitBreaker
from shop.messaging.context import MessageContext
from shop.messaging.context import handling as handling_envelope
from shop.messaging.logging import trace_ids
from shop.messaging.message import Delivery
from shop.messaging.middlewares import (
    Breakers,
    DeadLetters,
    Decoding,
    HandlerTimedOut,
    Handling,
    Inbox,
    Logging,
    Middleware,
    Observing,
    Outage,
    OutcomeObserver,
    OutcomeRecord,
    RateLimits,
    Retries,
    Routing,
    Slots,
    Spans,
    Timeout,
    compose,
)
from shop.messaging.outcome import Ack, Outcome
from shop.messaging.rate_limit import TokenBucket
from shop.messaging.retry import scaled_policies
from shop.messaging.subscriber import Router

__all__ = [
    "HandlerTimedOut",
    "OutcomeObserver",
    "OutcomeRecord",
    "Pipeline",
    "standard_middlewares",
]

log = structlog.get_logger("shop.messaging")


def standard_middlewares(
    router: Router,
    *,
    sessions: async_sessionmaker[AsyncSession] | None = None,
    time_scale: float = 1.0,
    handler_timeout: float = 120.0,
    outage: Callable[[BaseException], bool] | None = None,
    observers: Sequence[OutcomeObserver] = (),
    system: str | None = None,
    breakers: Mapping[str, CircuitBreaker] | None = None,
    rate_limits: Mapping[str, TokenBucket] | None = None,
) -> list[Middleware]:
    """What every worker does around each handler, outermost first.

    The outcome is decided inside the span and the reports (so that both see it): a dead
    letter for what no retry mends, else a retry; then the routing, which raises what
    the outcome is decided on. Slots before the outage's retries in place, the
    providers' breakers and their rate limits, so that a handler waiting holds its slot
    (and its consumer takes no more); the timeout inside them, so that each try has its
    own; the inbox innermost, its transaction around the handler alone."""
    policies = scaled_policies(router, time_scale)
    return [
        Observing(observers),
        Decoding(),
        Spans(system),
        Logging(),
        Retries(policies),
        DeadLetters(),
        Routing(router),
        Slots(router),
        Outage(policies, outage or (lambda _: False)),
        Breakers(breakers or {}),
        RateLimits(rate_limits or {}),
        Timeout(router, default=handler_timeout),
        Inbox(sessions),
    ]


class Pipeline:
    def __init__(
        self,
        router: Router,
        *,
        sessions: async_sessionmaker[AsyncSession] | None = None,
        time_scale: float = 1.0,
        handler_timeout: float = 120.0,
        outage: Callable[[BaseException], bool] | None = None,
        observers: list[OutcomeObserver] | None = None,
        system: str | None = None,
        middlewares: Sequence[Middleware] = (),
        breakers: Mapping[str, CircuitBreaker] | None = None,
        rate_limits: Mapping[str, TokenBucket] | None = None,
    ) -> None:
        """``system``: the transport's name, for the spans (the worker gives it).
        ``handler_timeout``: for the subscribers that declare no timeout of their own.
        ``outage``: whether a failure says something the handlers need is away (the
        service's database, say) rather than that the message failed: such a failure is
        tried again in place and does not spend the message's attempts (see
        :class:`RetryPolicy`). ``breakers``: the circuit breaker of each provider the
        subscribers name, by provider; ``rate_limits``: the token bucket of those that
        have a limit. ``middlewares``: the service's own, run inside the
        standard ones, just around the handler (inside its transaction, for a
        transactional subscriber)."""
        self.router = router
        self.group = router.group
        missing = [s.name for s in router if s.transactional and sessions is None]
        if missing:
            raise ValueError(f"transactional subscribers {missing} need a database session factory")
        self.middlewares = [
            *standard_middlewares(
                router,
                sessions=sessions,
                time_scale=time_scale,
                handler_timeout=handler_timeout,
                outage=outage,
                observers=observers or (),
                system=system,
                breakers=breakers,
                rate_limits=rate_limits,
            ),
            *middlewares,
        ]
        self._call = compose(self.middlewares, _handle)

    async def process(self, delivery: Delivery) -> Outcome:
        return await self._call(Handling(delivery, self.group))


async def _handle(handling: Handling) -> Outcome:
    """The subscriber's handler, given its context (the session, when transactional)."""
    subscriber, envelope = handling.routed()
    logger = log.bind(
        subscriber_id=handling.subscriber_id,
        event_id=str(envelope.event_id),
        correlation_id=envelope.correlation_id,
        message_type=envelope.type,
        attempt=handling.delivery.attempt,
        **trace_ids(),
    )
    with (
        handling_envelope(envelope),
        structlog.contextvars.bound_contextvars(
            event_id=str(envelope.event_id), correlation_id=envelope.correlation_id
        ),
    ):
        context = MessageContext(
            envelope,
            handling.subscriber_id or "",
            handling.delivery.attempt,
            handling.session,
            logger,
        )
        await subscriber.handler(envelope.payload, context)
    return Ack()
