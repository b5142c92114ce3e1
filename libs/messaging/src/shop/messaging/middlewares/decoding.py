"""The body read as an envelope, or why it is none: kept for the routing to raise, so that
the span and the outcome's report still see the delivery."""

from __future__ import annotations

from shop.contracts import decode
from shop.messaging.middlewares.chain import Handling, Next
from shop.messaging.outcome import Outcome


class Decoding:
    async def __call__(self, handling: Handling, call_next: Next) -> Outcome:
        try:
            handling.envelope = decode(handling.delivery.body)
        except Exception as error:
            handling.undecodable = error
        return await call_next(handling)
