"""order-service's ports in memory, with the outbox of :mod:`.outbox`: the checkout, and the
orders its worker's handlers change. The queries of the API publish nothing, so they answer
as for a shop with nothing to show."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import datetime

from shop.contracts import Contract, OrderCreated, PaymentReceived, PaymentReversed
from shop.messaging import MessageContext, OutboxItem
from shop.order.adapters.catalogue import SEED_PRODUCTS
from shop.order.domain.errors import OrderNotFound
from shop.order.domain.orders import OrderPage, OrderRecord, ProductView, placed_order_view
from shop.order.domain.payments import PaymentConflict
from shop.order.domain.status import OrderStatus
from shop.order.domain.stock import StockedProduct
from shop.order.ports import StoredAnswer

from .outbox import RecordingOutbox


@dataclass
class OrderBook:
    """What order-service's database would hold: the orders and the outbox."""

    orders: dict[uuid.UUID, OrderRecord] = field(default_factory=dict)
    outbox: RecordingOutbox = field(default_factory=RecordingOutbox)
    conflicts: list[tuple[PaymentReceived, PaymentConflict]] = field(default_factory=list)
    reversals: dict[tuple[uuid.UUID, str], OrderStatus] = field(default_factory=dict)
    resolved: list[tuple[uuid.UUID, PaymentConflict, str]] = field(default_factory=list)

    def status_of(self, order_id: uuid.UUID) -> OrderStatus:
        return self.orders[order_id].view.status

    def set_status(self, order_id: uuid.UUID, status: OrderStatus) -> None:
        record = self.orders[order_id]
        view = record.view.model_copy(update={"status": status})
        self.orders[order_id] = OrderRecord(view, record.customer_id, record.customer_email)


class FakeCheckout:
    """A checkout's transaction on the development catalogue, always with stock to spare."""

    def __init__(self, book: OrderBook) -> None:
        self.book = book

    async def claim_key(self, customer_id: str, key: str, request_hash: str) -> StoredAnswer | None:
        return None

    async def read_products(self, skus: Sequence[str]) -> dict[str, StockedProduct]:
        catalogue = {str(product["sku"]): product for product in SEED_PRODUCTS}
        return {
            sku: StockedProduct(
                sku, str(catalogue[sku]["name"]), int(str(catalogue[sku]["price"])), 1000
            )
            for sku in skus
            if sku in catalogue
        }

    async def take_stock(self, quantities: Mapping[str, int]) -> dict[str, StockedProduct]:
        return await self.read_products(sorted(quantities))

    async def insert_order(self, order: OrderCreated) -> None:
        self.book.orders[order.order_id] = OrderRecord(
            placed_order_view(order), order.customer_id, order.customer_email
        )

    async def add_to_outbox(self, *items: OutboxItem) -> None:
        for item in items:
            # The checkout adds bare events with their order's key; the adapter would too.
            assert isinstance(item.message, Contract)
            assert item.key is not None
            self.book.outbox.add(item.message, key=item.key, due_at=item.due_at)

    async def store_answer(self, customer_id: str, key: str, answer: StoredAnswer) -> None:
        return None


class FakeCheckoutStore:
    def __init__(self, book: OrderBook) -> None:
        self.book = book

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[FakeCheckout]:
        yield FakeCheckout(self.book)


class FakeOrders:
    def __init__(self, book: OrderBook) -> None:
        self.book = book

    async def products(self) -> list[ProductView]:
        return []

    async def product(self, sku: str) -> ProductView | None:
        return None

    async def page(self, customer_id: str, *, limit: int, cursor: str | None) -> OrderPage:
        return OrderPage(orders=[], next_cursor=None)

    async def get(
        self, order_id: uuid.UUID, *, customer_id: str | None = None, for_update: bool = False
    ) -> OrderRecord:
        record = self.book.orders.get(order_id)
        if record is None or customer_id not in (None, record.customer_id):
            raise OrderNotFound(order_id)
        return record

    async def return_stock(self, quantities: Mapping[str, int]) -> None:
        return None

    async def mark_cancelled(self, order_id: uuid.UUID, *, at: datetime) -> None:
        self.book.set_status(order_id, OrderStatus.CANCELLED)

    async def mark_paid(self, payment: PaymentReceived) -> None:
        self.book.set_status(payment.order_id, OrderStatus.PAID)

    async def record_conflict(
        self, payment: PaymentReceived, *, order_status: OrderStatus, conflict: PaymentConflict
    ) -> None:
        self.book.conflicts.append((payment, conflict))

    async def record_reversal(self, reversal: PaymentReversed, *, status: OrderStatus) -> bool:
        key = (reversal.order_id, reversal.reference)
        if key in self.book.reversals:
            return False
        self.book.reversals[key] = status
        return True

    async def mark_reversed(self, order_id: uuid.UUID, status: OrderStatus) -> None:
        self.book.set_status(order_id, status)

    async def resolve_conflicts(
        self, order_id: uuid.UUID, conflict: PaymentConflict, *, resolution: str, at: datetime
    ) -> int:
        self.book.resolved.append((order_id, conflict, resolution))
        return 1

    async def add_event(self, event: Contract, *, key: str) -> None:
        self.book.outbox.add(event, key=key)


class FakeOrderStore:
    def __init__(self, book: OrderBook) -> None:
        self.orders = FakeOrders(book)

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[FakeOrders]:
        yield self.orders

    @asynccontextmanager
    async def reading(self) -> AsyncIterator[FakeOrders]:
        yield self.orders

    def joining(self, ctx: MessageContext) -> FakeOrders:
        return self.orders

    async def check(self) -> None:
        return None
