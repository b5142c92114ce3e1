"""Each subscriber that names a provider calls it no faster than that provider's limit
(``MessagingSettings.rate_limits``), each try taking its turn: inside the breaker (a
message waiting for it takes no turn) and outside the timeout (waiting is not a try)."""

from __future__ import annotations

from collections.abc import Mapping

from shop.messaging.middlewares.chain import Handling, Next
from shop.messaging.outcome import Outcome
from shop.messaging.rate_limit import TokenBucket


class RateLimits:
    def __init__(self, buckets: Mapping[str, TokenBucket]) -> None:
        self.buckets = buckets
        """By provider."""

    async def __call__(self, handling: Handling, call_next: Next) -> Outcome:
        subscriber, _ = handling.routed()
        bucket = self.buckets.get(subscriber.provider) if subscriber.provider else None
        if bucket is not None:
            await bucket.take()
        return await call_next(handling)
