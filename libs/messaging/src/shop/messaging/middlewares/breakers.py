"""Each subscriber that names a provider (``Router.subscriber(provider=...)``) calls it
through that provider's circuit breaker: while it is open, the message waits here, in its
slot and with its attempts unspent, instead of failing try after try into a dead letter.
Only a call its handler says reached the provider (``provider_answered``) closes it; a
call cut at the handler's timeout while waiting on the provider (``calling_provider``)
counts as one that did not reach it, and a provider's ``Retry-After`` opens it at once.
Inside the outage's retries in place (a database outage is not the provider's) and
outside the timeout (waiting is not a try)."""

from __future__ import annotations

from collections.abc import Mapping

import structlog

from shop.messaging.breaker import BreakerState, CircuitBreaker, Contact, watching_contact
from shop.messaging.errors import ProviderUnavailable
from shop.messaging.middlewares.chain import Handling, Next
from shop.messaging.middlewares.timeout import HandlerTimedOut
from shop.messaging.outcome import Outcome

log = structlog.get_logger("shop.messaging")


class Breakers:
    def __init__(self, breakers: Mapping[str, CircuitBreaker]) -> None:
        self.breakers = breakers
        """By provider."""

    async def __call__(self, handling: Handling, call_next: Next) -> Outcome:
        subscriber, envelope = handling.routed()
        breaker = self.breakers.get(subscriber.provider) if subscriber.provider else None
        if breaker is None:
            return await call_next(handling)
        while True:
            probe = await breaker.admit()
            with watching_contact() as contact:
                try:
                    outcome = await call_next(handling)
                except (ProviderUnavailable, HandlerTimedOut) as error:
                    if not _provider_failed(error, breaker, contact):
                        await self._told(breaker, contact, probe=probe)
                        raise
                    retry_after = (
                        error.retry_after if isinstance(error, ProviderUnavailable) else None
                    )
                    if retry_after is not None:
                        await breaker.told_to_wait(retry_after, probe=probe)
                    else:
                        await breaker.unreachable(probe=probe)
                        if breaker.state is BreakerState.CLOSED:
                            raise  # below the threshold: an ordinary failed try
                    # A failed try, though it spends no attempt: a warning, as any other.
                    log.warning(
                        "provider away; the message waits for its breaker",
                        provider=breaker.provider,
                        group=handling.group,
                        subscriber=subscriber.name,
                        event_id=str(envelope.event_id),
                        error_type=type(error).__name__,
                        error=str(error),
                        retry_after=retry_after,
                    )
                    continue
                except BaseException:
                    # A refusal of this message alone (a PermanentError after the provider
                    # answered) says it is there; anything else says nothing of it.
                    await self._told(breaker, contact, probe=probe)
                    raise
            await self._told(breaker, contact, probe=probe)
            return outcome

    @staticmethod
    async def _told(breaker: CircuitBreaker, contact: Contact, *, probe: bool) -> None:
        if contact.answered:
            await breaker.reached()
        else:
            await breaker.untold(probe=probe)


def _provider_failed(error: Exception, breaker: CircuitBreaker, contact: Contact) -> bool:
    """Whether ``error`` says the breaker's provider failed to answer: it was unavailable,
    or the handler was cut at its timeout while waiting on it."""
    if isinstance(error, ProviderUnavailable):
        return error.provider == breaker.provider
    return contact.hung  # cut inside a call to the provider, whatever earlier calls said
