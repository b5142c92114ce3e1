"""At most ``max_in_flight`` handlers of one subscriber at once."""

from __future__ import annotations

import asyncio

from shop.messaging.middlewares.chain import Handling, Next
from shop.messaging.outcome import Outcome
from shop.messaging.subscriber import Router


class Slots:
    def __init__(self, router: Router) -> None:
        self.slots = {s.message_type: asyncio.Semaphore(s.max_in_flight) for s in router}

    async def __call__(self, handling: Handling, call_next: Next) -> Outcome:
        subscriber, _ = handling.routed()
        async with self.slots[subscriber.message_type]:
            return await call_next(handling)
