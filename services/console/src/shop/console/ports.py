"""What the pages read and do, as Protocols: order-service's orders, the operations of the
running shop (from :mod:`shop.ops`), and the AsyncAPI documents. ``bootstrap`` fills them
with the real adapters; unit tests with the fakes of ``tests/unit/fakes.py``."""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Generic, Protocol, TypeVar

from shop.console.domain.asyncapi import DocumentView
from shop.console.domain.orders import OrderSummary
from shop.ops.consumers import ConsumerCounts
from shop.ops.deadletters import DeadLetterEntry, Purged
from shop.ops.lag import ConsumerLag
from shop.ops.mail import CapturedMail
from shop.ops.outbox import OutboxStatus
from shop.ops.reconciliation import Reconciliation
from shop.ops.timeline import TimelineEntry
from shop.ops.traces import OrderTrace

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Partial(Generic[T]):
    """What could be read of several parts, and, in one line each, those that could not:
    one service down does not hide the others."""

    items: list[T]
    problems: list[str] = field(default_factory=list)


class OrderDirectory(Protocol):
    """Order-service's orders, read-only (through its internal API)."""

    async def search(self, query: str, *, limit: int = 50) -> list[OrderSummary]:
        """Orders whose id is ``query`` or whose number contains it, newest first; the
        newest ``limit`` orders when ``query`` is empty."""
        ...

    async def get(self, order_id: uuid.UUID) -> OrderSummary | None: ...


@dataclass(frozen=True, slots=True)
class LetterQuery:
    """The dead-letter filter form; an empty field matches everything."""

    group: str | None = None
    message_type: str | None = None
    error_type: str | None = None
    text: str | None = None
    """Found in the error message, the message type or the body."""

    @property
    def empty(self) -> bool:
        return not (self.group or self.message_type or self.error_type or self.text)

    @property
    def description(self) -> str:
        """The filter in words: ``every dead letter of payment-service, error TimeoutError``."""
        parts = [
            f"{label} {value}"
            for label, value in (
                ("of", self.group),
                ("of type", self.message_type),
                ("with error", self.error_type),
                ("containing", f"“{self.text}”" if self.text else None),
            )
            if value
        ]
        return " ".join(["every dead letter", *parts])


@dataclass(frozen=True, slots=True)
class LetterPage:
    """One page of dead letters, and the cursor of the next (None: the last)."""

    letters: list[DeadLetterEntry]
    next_cursor: str | None = None


class Operations(Protocol):
    """The running shop as :mod:`shop.ops` sees it. Failures to reach a part are
    :class:`shop.ops.errors.OpsError`, shown on the page that needed it."""

    async def outbox(self) -> Partial[OutboxStatus]:
        """Each publishing service's outbox, from its internal API."""
        ...

    async def consumer_counts(self) -> Partial[ConsumerCounts]:
        """Each consumer group's counts, from its service's worker."""
        ...

    async def consumer_lag(self) -> list[ConsumerLag]: ...

    async def groups(self) -> list[str]:
        """Every consumer group of the shop (each has its own dead letters)."""
        ...

    async def dead_letters(self, query: LetterQuery, *, cursor: str | None = None) -> LetterPage:
        """One page of the letters ``query`` matches, from ``cursor`` (a page's
        ``next_cursor``; the first page without). Raise
        :class:`shop.console.domain.errors.NotFound` for a cursor of no page."""
        ...

    async def dead_letter(self, group: str, letter_id: str) -> DeadLetterEntry:
        """Raise :class:`shop.console.domain.errors.NotFound` when there is none."""
        ...

    async def redrive(self, group: str, letter_id: str) -> DeadLetterEntry:
        """Give the letter back to its consumer (``group`` alone); it leaves the list."""
        ...

    async def redrive_matching(self, query: LetterQuery, *, per_second: float) -> int:
        """Redrive every letter ``query`` matches, at most ``per_second`` a second."""
        ...

    async def purge(self, group: str, letter_id: str) -> Purged:
        """Delete the letter from its service's store, body and all; what was deleted."""
        ...

    async def reconciliation(self) -> Reconciliation | None:
        """The last reconciliation payment-service's worker ran (None before its first)."""
        ...

    async def reconcile(self) -> Reconciliation:
        """Reconcile now: the gateways against the payments, then against orders and
        e-mails."""
        ...

    async def order_timeline(self, order_id: uuid.UUID) -> list[TimelineEntry]: ...

    async def order_traces(self, order_id: uuid.UUID) -> list[OrderTrace] | None:
        """The order's traces, span by span; None where the shop's traces are not kept in
        a folder the console reads (production: they are in the tracing backend)."""
        ...

    async def captured_mail(self) -> list[CapturedMail]:
        """The e-mails the development SMTP sink kept, newest first."""
        ...

    async def captured_mail_named(self, name: str) -> CapturedMail | None:
        """One of them by its file name, read alone; None when there is none."""
        ...


class Documents(Protocol):
    """The committed AsyncAPI documents, one per service."""

    def services(self) -> list[str]: ...

    def document(self, service: str) -> DocumentView:
        """Raise :class:`shop.console.domain.errors.NotFound` for an unknown service."""
        ...

    def raw(self, service: str) -> bytes:
        """The document's JSON text, as committed."""
        ...


@dataclass
class Sources:
    """What ``bootstrap`` wires into the app, and how to close it when the app stops."""

    orders: OrderDirectory
    operations: Operations
    documents: Documents
    close: list[Callable[[], Awaitable[None]]] = field(default_factory=list)
