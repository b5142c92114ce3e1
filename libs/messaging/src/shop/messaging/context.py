"""What a handler receives beside its event: the envelope, the attempt, a database session
for transactional handlers, and a bound logger carrying the message's ids."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from shop.contracts import Contract, Envelope

_current_envelope: ContextVar[Envelope[Contract] | None] = ContextVar(
    "shop_messaging_current_envelope", default=None
)


def current_envelope() -> Envelope[Contract] | None:
    """The message being handled in this task, if any: the cause of what it publishes."""
    return _current_envelope.get()


@contextmanager
def handling(envelope: Envelope[Contract]) -> Iterator[None]:
    token = _current_envelope.set(envelope)
    try:
        yield
    finally:
        _current_envelope.reset(token)


@dataclass(frozen=True, slots=True)
class MessageContext:
    envelope: Envelope[Contract]
    subscriber_id: str
    """``group:subscriber``, the name under which the inbox records this message."""
    attempt: int
    session: AsyncSession | None
    log: Any
    """A structlog logger bound to event_id, correlation_id, trace id and message type."""

    @property
    def db(self) -> AsyncSession:
        """The transaction of a transactional handler (its inbox row commits with it)."""
        if self.session is None:
            raise RuntimeError(f"{self.subscriber_id} is not transactional: it has no session")
        return self.session
