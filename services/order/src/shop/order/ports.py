"""What order-service's use cases need from the world, as Protocols: ``adapters/``
implements them on Postgres, unit tests implement them with fakes, ``bootstrap`` chooses."""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from datetime import datetime
from typing import Protocol

from shop.contracts import Contract, OrderCreated, PaymentReceived, PaymentReversed
from shop.messaging import MessageContext, OutboxItem
from shop.order.domain.orders import OrderPage, OrderRecord, ProductView
from shop.order.domain.payments import PaymentConflict
from shop.order.domain.reversals import RecordedReversal
from shop.order.domain.status import OrderStatus
from shop.order.domain.stock import StockedProduct


class Orders(Protocol):
    """The orders and products of one database transaction, and its outbox: an event added
    here is published after the transaction commits, and never if it rolls back."""

    async def products(self) -> list[ProductView]:
        """The products on sale, by sku."""
        ...

    async def product(self, sku: str) -> ProductView | None: ...

    async def get(
        self, order_id: uuid.UUID, *, customer_id: str | None = None, for_update: bool = False
    ) -> OrderRecord:
        """The order, or :class:`~shop.order.domain.errors.OrderNotFound` (also when it
        belongs to another customer than ``customer_id``). ``for_update`` locks it until
        the transaction ends."""
        ...

    async def page(self, customer_id: str, *, limit: int, cursor: str | None) -> OrderPage:
        """The customer's orders, newest first, ``limit`` at a time; a cursor this service
        did not hand out is :class:`~shop.order.domain.errors.InvalidCursor`."""
        ...

    async def return_stock(self, quantities: Mapping[str, int]) -> None:
        """Put ``quantities`` (by sku) back on the shelf."""
        ...

    async def mark_cancelled(self, order_id: uuid.UUID, *, at: datetime) -> None: ...

    async def mark_paid(self, payment: PaymentReceived) -> None:
        """Record ``payment`` on its order, which must be pending."""
        ...

    async def record_conflict(
        self, payment: PaymentReceived, *, order_status: OrderStatus, conflict: PaymentConflict
    ) -> None:
        """Keep a payment that was not applied, for a person to settle."""
        ...

    async def record_reversal(self, reversal: PaymentReversed, *, status: OrderStatus) -> bool:
        """Keep ``reversal`` on its order (``order_reversals``, with the order's ``status``
        after it); False, and nothing kept, when its reference is recorded already."""
        ...

    async def furthest_reversal(
        self, order_id: uuid.UUID, payment_id: uuid.UUID
    ) -> RecordedReversal | None:
        """Of the reversals kept on the order for ``payment_id``, the one that brought the most back
        (the largest ``reversed_total``); None when none is kept."""
        ...

    async def mark_reversed(self, order_id: uuid.UUID, status: OrderStatus) -> None:
        """A paid or fulfilled order's status after a reversal of its payment."""
        ...

    async def resolve_conflicts(
        self, order_id: uuid.UUID, conflict: PaymentConflict, *, resolution: str, at: datetime
    ) -> int:
        """End the order's open ``conflict`` rows with ``resolution``; how many ended."""
        ...

    async def add_event(self, event: Contract, *, key: str) -> None:
        """Add ``event`` to the outbox of this transaction."""
        ...


class OrderStore(Protocol):
    """Where the orders are kept: each use case works in one of its transactions."""

    def transaction(self) -> AbstractAsyncContextManager[Orders]:
        """A transaction, committed when the block ends, rolled back when it raises."""
        ...

    def reading(self) -> AbstractAsyncContextManager[Orders]:
        """A read-only look, for queries."""
        ...

    def joining(self, ctx: MessageContext) -> Orders:
        """The orders of a message handler's transaction (the one its inbox row commits
        with): the handler's effects and its dedup record commit together."""
        ...

    async def check(self) -> None:
        """Raise when the store cannot be reached (readiness)."""
        ...


@dataclass(frozen=True, slots=True)
class StoredAnswer:
    """What a checkout answered: the JSON text exactly as stored with its idempotency key,
    so that a replay returns the same bytes as the first answer."""

    status: int
    body: str
    order_id: uuid.UUID
    replayed: bool = False


class CheckoutTransaction(Protocol):
    """The steps of one checkout, all in one transaction. The hot path: its adapter speaks
    plain SQL to the driver, one round trip a step."""

    async def claim_key(self, customer_id: str, key: str, request_hash: str) -> StoredAnswer | None:
        """Claim the idempotency ``key`` for this request, or return the answer given to
        the request that claimed it first (:class:`~shop.order.domain.errors.
        IdempotencyConflict` when that request had another body). A concurrent request
        with the same key waits until the first commits or rolls back."""
        ...

    async def read_products(self, skus: Sequence[str]) -> dict[str, StockedProduct]:
        """The products on sale among ``skus`` as last committed, not locked: concurrent
        checkouts of a product do not wait for each other here."""
        ...

    async def take_stock(self, quantities: Mapping[str, int]) -> dict[str, StockedProduct]:
        """Take ``quantities`` (by sku) off the shelf, each line only if that much is left:
        the checkout's last step, for the products stay locked from here until the
        transaction ends (locked in sku order, so that overlapping checkouts queue instead
        of deadlocking). Returns the products on sale among them as locked, before anything
        was taken: a line missing there, or wanting more than its stock, was not taken, and
        the caller refuses the order (its transaction then rolls back what was)."""
        ...

    async def insert_order(self, order: OrderCreated) -> None:
        """Record the order and its lines as its event states them; a drawn order number
        that is taken already is :class:`~shop.order.domain.errors.OrderNumberTaken`."""
        ...

    async def add_to_outbox(self, *items: OutboxItem) -> None:
        """Add ``items`` (events, and scheduled commands) to the outbox of this transaction,
        in one round trip."""
        ...

    async def store_answer(self, customer_id: str, key: str, answer: StoredAnswer) -> None: ...


class CheckoutStore(Protocol):
    def transaction(self) -> AbstractAsyncContextManager[CheckoutTransaction]:
        """A transaction, committed when the block ends, rolled back when it raises."""
        ...


@dataclass(frozen=True, slots=True)
class Stores:
    """Everything the API and the worker are wired with: ``bootstrap`` builds the Postgres
    ones, unit tests build fakes."""

    orders: OrderStore
    checkout: CheckoutStore
    close: Sequence[Callable[[], Awaitable[None]]] = field(default=())
    """Called when the process stops (the engine's pool, say)."""
