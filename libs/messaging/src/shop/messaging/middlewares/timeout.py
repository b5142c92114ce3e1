"""A handler cancelled at its subscriber's timeout (or the worker's): a transient failure,
retried, told apart from a TimeoutError the handler raised itself. A hung call frees its
key and its slot."""

from __future__ import annotations

import asyncio

from shop.messaging.middlewares.chain import Handling, Next
from shop.messaging.outcome import Outcome
from shop.messaging.subscriber import Router


class HandlerTimedOut(Exception):
    """A handler ran past its timeout and was cancelled: retried like any transient failure."""


class Timeout:
    def __init__(self, router: Router, *, default: float) -> None:
        self.timeouts = {s.message_type: s.timeout or default for s in router}

    async def __call__(self, handling: Handling, call_next: Next) -> Outcome:
        subscriber, _ = handling.routed()
        seconds = self.timeouts[subscriber.message_type]
        deadline = asyncio.timeout(seconds)
        try:
            async with deadline:
                return await call_next(handling)
        except TimeoutError as error:
            if deadline.expired():
                raise HandlerTimedOut(
                    f"{subscriber.name} took longer than {seconds:g} s"
                ) from error
            raise
