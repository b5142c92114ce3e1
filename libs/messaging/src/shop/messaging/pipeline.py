"""One delivery, start to finish: decode → validate → route → inbox → handle → outcome.

The pipeline is transport-agnostic: it turns a :class:`Delivery` into an :class:`Outcome`
and never raises for a bad message or a failed handler. Only cancellation (shutdown)
escapes, leaving the message unacknowledged so that it is delivered again.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import Callable
from datetime import UTC, datetime

import structlog
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from shop.contracts import Contract, ContractError, Envelope, decode
from shop.messaging import tracing
from shop.messaging.context import MessageContext, handling
from shop.messaging.errors import NoSubscriber, PermanentError
from shop.messaging.message import Delivery
from shop.messaging.outcome import Ack, DeadLetter, Failure, Outcome, Retry
from shop.messaging.retry import RetryPolicy
from shop.messaging.schema import inbox
from shop.messaging.subscriber import Router, Subscriber

log = structlog.get_logger("shop.messaging")


class HandlerTimedOut(Exception):
    """A handler ran past its timeout and was cancelled: retried like any transient failure."""


@dataclasses.dataclass(frozen=True, slots=True)
class OutcomeRecord:
    """What observers (metrics, tests) learn of each handled delivery."""

    group: str
    subscriber: str | None
    message_type: str | None
    attempt: int
    outcome: Outcome
    seconds: float


OutcomeObserver = Callable[[OutcomeRecord], None]


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
    ) -> None:
        """``system``: the transport's name, for the spans (the worker gives it).
        ``handler_timeout``: for the subscribers that declare no timeout of their own.
        ``outage``: whether a failure says something the handlers need is away (the
        service's database, say) rather than that the message failed: such a failure is
        tried again in place and does not spend the message's attempts (see
        :class:`RetryPolicy`)."""
        self.router = router
        self.system = system
        self.group = router.group
        self.sessions = sessions
        self.observers = list(observers or [])
        self._outage = outage or (lambda _: False)
        self._policies = {
            s.message_type: dataclasses.replace(s.retry, time_scale=time_scale) for s in router
        }
        self._slots = {s.message_type: asyncio.Semaphore(s.max_in_flight) for s in router}
        self._timeouts = {s.message_type: s.timeout or handler_timeout for s in router}
        missing = [s.name for s in router if s.transactional and sessions is None]
        if missing:
            raise ValueError(f"transactional subscribers {missing} need a database session factory")

    def subscriber_id(self, subscriber: Subscriber) -> str:
        """``group:subscriber``: a subscriber named apart from those of other consumers,
        as the inbox records what it handled (in the inbox's ``consumer`` column)."""
        return f"{self.group}:{subscriber.name}"

    async def process(self, delivery: Delivery) -> Outcome:
        started = time.perf_counter()
        subscriber: Subscriber | None = None
        decoded = _decode(delivery.body)
        envelope = None if isinstance(decoded, Exception) else decoded
        # The CONSUMER span: a child of the envelope's traceparent, current while the
        # handler runs (so what it publishes and logs belongs to the same trace).
        with tracing.consuming(delivery, envelope, group=self.group, system=self.system) as span:
            try:
                if isinstance(decoded, Exception):
                    raise decoded  # a body that is no envelope: its outcome is decided below
                envelope = decoded
                subscriber = self.router.for_type(envelope.type)
                if subscriber is None:
                    raise NoSubscriber(self.group, envelope.type)
                if not isinstance(envelope.payload, subscriber.contract):
                    raise PermanentError(
                        f"{subscriber.name} handles {subscriber.contract.contract_id()}, "
                        f"not {envelope.type}.v{envelope.version}"
                    )
                async with self._slots[subscriber.message_type]:
                    outcome: Outcome = await self._handle_through_outage(
                        subscriber, envelope, delivery
                    )
            except (ContractError, PermanentError) as error:
                outcome = self._dead_letter(delivery, error)
            except Exception as error:  # every unexpected failure is transient by design
                policy = self._policies.get(envelope.type) if envelope else None
                outcome = self._retry_or_give_up(delivery, error, policy or RetryPolicy())
            tracing.record_outcome(
                span, outcome, subscriber_id=self.subscriber_id(subscriber) if subscriber else None
            )
            self._report(delivery, subscriber, envelope, outcome, time.perf_counter() - started)
        return outcome

    async def _handle_through_outage(
        self, subscriber: Subscriber, envelope: Envelope[Contract], delivery: Delivery
    ) -> Ack:
        """:meth:`_handle_within`, tried again in place while its failure says what the
        handler needs is away (a database restarting): the message keeps its attempts for
        failures of its own, and a restart sends nothing round the bus. An outage that
        outlasts the policy's ``outage_attempts`` tries is a failure like any other."""
        policy = self._policies[subscriber.message_type]
        tries = 1
        while True:
            try:
                return await self._handle_within(subscriber, envelope, delivery)
            except Exception as error:
                if not self._outage(error) or tries >= policy.outage_attempts:
                    raise
                delay = policy.outage_delay(tries)
                log.warning(
                    "what the handler needs is away; trying again in place",
                    group=self.group,
                    subscriber=subscriber.name,
                    event_id=str(envelope.event_id),
                    attempt=delivery.attempt,
                    tries=tries,
                    delay_seconds=round(delay, 3),
                    error=str(error),
                )
                await asyncio.sleep(delay)
                tries += 1

    async def _handle_within(
        self, subscriber: Subscriber, envelope: Envelope[Contract], delivery: Delivery
    ) -> Ack:
        """:meth:`_handle`, cancelled at the subscriber's timeout: then a transient failure
        (retried), told apart from a TimeoutError the handler raised itself."""
        seconds = self._timeouts[subscriber.message_type]
        deadline = asyncio.timeout(seconds)
        try:
            async with deadline:
                return await self._handle(subscriber, envelope, delivery)
        except TimeoutError as error:
            if deadline.expired():
                raise HandlerTimedOut(
                    f"{subscriber.name} took longer than {seconds:g} s"
                ) from error
            raise

    async def _handle(
        self, subscriber: Subscriber, envelope: Envelope[Contract], delivery: Delivery
    ) -> Ack:
        subscriber_id = self.subscriber_id(subscriber)
        logger = log.bind(
            subscriber_id=subscriber_id,
            event_id=str(envelope.event_id),
            correlation_id=envelope.correlation_id,
            message_type=envelope.type,
            attempt=delivery.attempt,
            **tracing.log_ids(),
        )
        with (
            handling(envelope),
            structlog.contextvars.bound_contextvars(
                event_id=str(envelope.event_id), correlation_id=envelope.correlation_id
            ),
        ):
            if not subscriber.transactional:
                context = MessageContext(envelope, subscriber_id, delivery.attempt, None, logger)
                await subscriber.handler(envelope.payload, context)
                return Ack()
            assert self.sessions is not None  # checked in __init__
            async with self.sessions() as session, session.begin():
                # Inserted in the handler's own transaction: the effects and the record
                # that they happened commit together, or neither does.
                first_time = await session.execute(
                    insert(inbox)
                    .values(
                        consumer=subscriber_id,
                        event_id=envelope.event_id,
                        message_type=envelope.type,
                    )
                    .on_conflict_do_nothing()
                    .returning(inbox.c.event_id)
                )
                if first_time.first() is None:
                    logger.info("duplicate message skipped")
                    return Ack(duplicate=True)
                context = MessageContext(envelope, subscriber_id, delivery.attempt, session, logger)
                await subscriber.handler(envelope.payload, context)
            return Ack()

    def _dead_letter(self, delivery: Delivery, error: BaseException) -> DeadLetter:
        now = datetime.now(UTC)
        return DeadLetter(
            failure=Failure.of(error),
            attempts=delivery.attempt,
            first_failure_at=delivery.first_failure_at or now,
            last_failure_at=now,
        )

    def _retry_or_give_up(
        self, delivery: Delivery, error: BaseException, policy: RetryPolicy
    ) -> Retry | DeadLetter:
        if policy.gives_up_after(delivery.attempt):
            return self._dead_letter(delivery, error)
        return Retry(
            delay=policy.delay(delivery.attempt),
            attempt=delivery.attempt,
            failure=Failure.of(error),
            first_failure_at=delivery.first_failure_at or datetime.now(UTC),
        )

    def _report(
        self,
        delivery: Delivery,
        subscriber: Subscriber | None,
        envelope: Envelope[Contract] | None,
        outcome: Outcome,
        seconds: float,
    ) -> None:
        fields = {
            "group": self.group,
            "subscriber": subscriber.name if subscriber else None,
            "event_id": str(envelope.event_id) if envelope else None,
            "source": delivery.source,
            "attempt": delivery.attempt,
        }
        if isinstance(outcome, Retry):
            log.warning(
                "handler failed, will retry",
                delay_seconds=round(outcome.delay, 3),
                error_type=outcome.failure.error_type,
                error=outcome.failure.error_message,
                **fields,
            )
        elif isinstance(outcome, DeadLetter):
            log.error(
                "message dead-lettered",
                error_type=outcome.failure.error_type,
                error=outcome.failure.error_message,
                **fields,
            )
        record = OutcomeRecord(
            group=self.group,
            subscriber=subscriber.name if subscriber else None,
            message_type=envelope.type if envelope else None,
            attempt=delivery.attempt,
            outcome=outcome,
            seconds=seconds,
        )
        for observer in self.observers:
            observer(record)


def _decode(body: bytes) -> Envelope[Contract] | Exception:
    """The envelope, or why there is none (raised where the outcome is decided)."""
    try:
        return decode(body)
    except Exception as error:
        return error
