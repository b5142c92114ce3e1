"""What a middleware is, and how a list of them becomes one call."""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Awaitable, Callable, Sequence
from typing import Protocol

from sqlalchemy.ext.asyncio import AsyncSession

from shop.contracts import Contract, Envelope
from shop.messaging.message import Delivery
from shop.messaging.outcome import Outcome
from shop.messaging.subscriber import Subscriber


@dataclasses.dataclass(slots=True)
class Handling:
    """One delivery on its way through the chain: each middleware reads what the outer
    ones learnt of it and adds what it learns."""

    delivery: Delivery
    group: str
    envelope: Envelope[Contract] | None = None
    undecodable: Exception | None = None
    """Why the body is no envelope (raised where the outcome is decided)."""
    subscriber: Subscriber | None = None
    session: AsyncSession | None = None
    """The handler's transaction, for a transactional subscriber."""

    def routed(self) -> tuple[Subscriber, Envelope[Contract]]:
        """The subscriber and its envelope, for a middleware inside the routing."""
        if self.subscriber is None or self.envelope is None:
            raise RuntimeError("a middleware that needs the subscriber runs before the routing")
        return self.subscriber, self.envelope

    @property
    def subscriber_id(self) -> str | None:
        """``group:subscriber``, as the inbox records it (once routed)."""
        return f"{self.group}:{self.subscriber.name}" if self.subscriber else None


Next = Callable[[Handling], Awaitable[Outcome]]


class Middleware(Protocol):
    async def __call__(self, handling: Handling, call_next: Next) -> Outcome: ...


def compose(middlewares: Sequence[Middleware], endpoint: Next) -> Next:
    """One call through ``middlewares``, the first outermost, ending at ``endpoint``."""
    call = endpoint
    for middleware in reversed(middlewares):
        call = functools.partial(middleware, call_next=call)
    return call
