"""What payment-service's use cases need from the world, as Protocols: ``adapters/``
implements them on Postgres, unit tests implement them with fakes, ``bootstrap`` chooses."""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager
from typing import Protocol

from shop.contracts import Contract
from shop.payment.domain.notifications import Notification


class WebhookEvents(Protocol):
    """The gateway notifications of one transaction, and its outbox."""

    async def record(self, notification: Notification, raw_body: bytes) -> bool:
        """Keep ``notification`` with its body byte for byte, once per provider event id;
        False when it was kept already (a repeat)."""
        ...

    async def add_command(self, command: Contract, *, key: str) -> None:
        """Add ``command`` to the outbox of this transaction."""
        ...


class WebhookStore(Protocol):
    def transaction(self) -> AbstractAsyncContextManager[WebhookEvents]:
        """A transaction, committed when the block ends, rolled back when it raises."""
        ...

    async def check(self) -> None:
        """Raise when the store cannot be reached (readiness)."""
        ...
