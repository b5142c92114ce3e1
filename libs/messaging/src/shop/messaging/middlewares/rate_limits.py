"""Each subscriber that names a provider calls it no faster than that provider's limit
(``MessagingSettings.rate_limits``), each try taking its turn: inside the breaker (a
message waiting for it takes no turn) and outside the timeout (waiting is not a try).

A refusal for going too fast slows the provider's bucket down and counts as an ordinary
failed try, the provider being there; once the bucket is as slow as it goes, such a
refusal counts towards the breaker like any other. One that also says when to come back
(a 429 with ``Retry-After``) goes on to the breaker, which holds the message that long."""

from __future__ import annotations

from collections.abc import Mapping

import structlog

from shop.messaging.breaker import provider_answered, provider_has_answered
from shop.messaging.errors import ProviderUnavailable, TransientError
from shop.messaging.middlewares.chain import Handling, Next
from shop.messaging.outcome import Outcome
from shop.messaging.rate_limit import TokenBucket

log = structlog.get_logger("shop.messaging")


class RateLimits:
    def __init__(self, buckets: Mapping[str, TokenBucket]) -> None:
        self.buckets = buckets
        """By provider."""

    async def __call__(self, handling: Handling, call_next: Next) -> Outcome:
        subscriber, _ = handling.routed()
        bucket = self.buckets.get(subscriber.provider) if subscriber.provider else None
        if bucket is None:
            return await call_next(handling)
        await bucket.take()
        try:
            outcome = await call_next(handling)
        except ProviderUnavailable as error:
            if not error.too_fast or error.provider != subscriber.provider:
                raise
            slowed = bucket.slow_down()
            if error.retry_after is not None or not slowed:
                raise  # for the breaker: it holds the message that long, or counts it
            log.warning(
                "provider says the shop calls too fast; slowing down",
                provider=error.provider,
                group=handling.group,
                rate=round(bucket.rate, 3),
                error=str(error),
            )
            provider_answered()  # it is there: the breaker counts no failure
            raise TransientError(str(error)) from error
        if provider_has_answered():
            bucket.speed_up()
        return outcome
