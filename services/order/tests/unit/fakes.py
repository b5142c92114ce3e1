"""In-memory stand-ins for order-service's ports: one shop's state, a transaction that
rolls back on an exception as Postgres does, and the outbox as a list of events."""

from __future__ import annotations

import copy
import uuid
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import datetime

from shop.contracts import Contract, OrderCreated, PaymentReceived, PaymentReversed
from shop.messaging import MessageContext, OutboxItem
from shop.order.adapters.catalogue import SEED_PRODUCTS
from shop.order.bus import PUBLISHES
from shop.order.domain.customer import Customer
from shop.order.domain.errors import (
    IdempotencyConflict,
    InvalidCursor,
    OrderNotFound,
    OrderNumberTaken,
)
from shop.order.domain.orders import OrderPage, OrderRecord, ProductView, placed_order_view
from shop.order.domain.payments import PaymentConflict
from shop.order.domain.reversals import RecordedReversal
from shop.order.domain.status import OrderStatus
from shop.order.domain.stock import StockedProduct
from shop.order.ports import StoredAnswer, Stores
from shop.order.service_layer.checkout import place_order


def declared(message: Contract) -> Contract:
    """``message``, which the outbox takes only if order-service declares that it publishes
    it: a use case that writes something else fails its own tests."""
    assert type(message) in PUBLISHES, (
        f"{type(message).__name__} is not in shop.order.bus.PUBLISHES: declare it there and "
        "run `python -m shop.messaging.asyncapi check --update`"
    )
    return message


@dataclass
class Conflict:
    payment: PaymentReceived
    order_status: OrderStatus
    conflict: PaymentConflict
    resolved_at: datetime | None = None
    resolution: str | None = None


@dataclass
class ShopState:
    """Everything the database would hold. Copied at the start of a transaction and put
    back when it raises."""

    stock: dict[str, int] = field(default_factory=dict)
    products: dict[str, ProductView] = field(default_factory=dict)
    orders: dict[uuid.UUID, OrderRecord] = field(default_factory=dict)
    numbers: set[str] = field(default_factory=set)
    keys: dict[tuple[str, str], tuple[str, StoredAnswer | None]] = field(default_factory=dict)
    conflicts: list[Conflict] = field(default_factory=list)
    reversals: dict[tuple[uuid.UUID, str], tuple[PaymentReversed, OrderStatus]] = field(
        default_factory=dict
    )
    """order_reversals: each reversal by (order_id, reference), with the status after it."""
    outbox: list[Contract] = field(default_factory=list)
    scheduled: list[tuple[datetime, Contract]] = field(default_factory=list)
    """Messages added to the outbox for later, with the time they are due."""
    commits: int = 0

    @classmethod
    def seeded(cls) -> ShopState:
        """The development catalogue, as ``python -m shop.order seed`` leaves it."""
        state = cls()
        for product in SEED_PRODUCTS:
            sku = str(product["sku"])
            state.stock[sku] = int(str(product["stock"]))
            state.products[sku] = ProductView(
                sku=sku,
                name=str(product["name"]),
                description=str(product["description"]),
                price=int(str(product["price"])),
                currency="IDR",
                in_stock=state.stock[sku],
            )
        return state

    def events_of(self, kind: type[Contract]) -> list[Contract]:
        return [event for event in self.outbox if isinstance(event, kind)]


class FakeDatabase:
    """Both stores over one :class:`ShopState`."""

    def __init__(self, state: ShopState | None = None) -> None:
        self.state = state or ShopState.seeded()
        self.taken_numbers: list[str] = []
        """Order numbers the next checkouts will find taken (a collision, drawn on purpose)."""
        self.meanwhile: list[Callable[[ShopState], None]] = []
        """What other transactions commit while the next checkouts write their orders (one
        each, in turn): after a checkout read its products, before it takes their stock."""
        self._committed_by_others: list[Callable[[ShopState], None]] = []

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[None]:
        saved = copy.deepcopy(self.state)
        self._committed_by_others = []
        try:
            yield
        except BaseException:
            self.state.__dict__.update(saved.__dict__)
            # What the others committed stays, as it would in the database.
            for change in self._committed_by_others:
                change(self.state)
            raise
        self.state.commits += 1

    def others_commit(self, change: Callable[[ShopState], None]) -> None:
        """``change`` committed by another transaction, while this one is open."""
        change(self.state)
        self._committed_by_others.append(change)

    def stores(self) -> Stores:
        return Stores(orders=FakeOrderStore(self), checkout=FakeCheckoutStore(self))

    async def checkout(
        self, customer: Customer, *lines: tuple[str, int], key: str = "k", request_hash: str = "h"
    ) -> StoredAnswer:
        """Place an order through the checkout's use case, as the API does."""
        return await place_order(
            self.stores().checkout,
            customer,
            list(lines),
            idempotency_key=key,
            request_hash=request_hash,
        )


class _OnTheDatabase:
    def __init__(self, database: FakeDatabase) -> None:
        self.database = database

    @property
    def state(self) -> ShopState:
        """Read each time: a rolled-back transaction puts the state back in place."""
        return self.database.state


class FakeOrders(_OnTheDatabase):
    async def products(self) -> list[ProductView]:
        return [
            product.model_copy(update={"in_stock": self.state.stock[sku]})
            for sku, product in sorted(self.state.products.items())
        ]

    async def product(self, sku: str) -> ProductView | None:
        product = self.state.products.get(sku)
        return product and product.model_copy(update={"in_stock": self.state.stock[sku]})

    async def get(
        self, order_id: uuid.UUID, *, customer_id: str | None = None, for_update: bool = False
    ) -> OrderRecord:
        record = self.state.orders.get(order_id)
        if record is None or customer_id not in (None, record.customer_id):
            raise OrderNotFound(order_id)
        return record

    async def page(self, customer_id: str, *, limit: int, cursor: str | None) -> OrderPage:
        if cursor is not None:
            raise InvalidCursor
        mine = [r.view for r in self.state.orders.values() if r.customer_id == customer_id]
        mine.sort(key=lambda view: (view.created_at, view.id), reverse=True)
        return OrderPage(orders=mine[:limit], next_cursor=None)

    async def return_stock(self, quantities: Mapping[str, int]) -> None:
        for sku, quantity in quantities.items():
            self.state.stock[sku] += quantity

    async def mark_cancelled(self, order_id: uuid.UUID, *, at: datetime) -> None:
        self.set_status(order_id, OrderStatus.CANCELLED)

    async def mark_paid(self, payment: PaymentReceived) -> None:
        self.set_status(payment.order_id, OrderStatus.PAID)

    async def record_conflict(
        self, payment: PaymentReceived, *, order_status: OrderStatus, conflict: PaymentConflict
    ) -> None:
        self.state.conflicts.append(Conflict(payment, order_status, conflict))

    async def record_reversal(self, reversal: PaymentReversed, *, status: OrderStatus) -> bool:
        key = (reversal.order_id, reversal.reference)
        if key in self.state.reversals:
            return False
        self.state.reversals[key] = (reversal, status)
        return True

    async def furthest_reversal(
        self, order_id: uuid.UUID, payment_id: uuid.UUID
    ) -> RecordedReversal | None:
        kept = [
            r
            for r, _ in self.state.reversals.values()
            if (r.order_id, r.payment_id) == (order_id, payment_id)
        ]
        if not kept:
            return None
        return RecordedReversal.of(max(kept, key=lambda r: r.reversed_total))

    async def mark_reversed(self, order_id: uuid.UUID, status: OrderStatus) -> None:
        self.set_status(order_id, status)

    async def resolve_conflicts(
        self, order_id: uuid.UUID, conflict: PaymentConflict, *, resolution: str, at: datetime
    ) -> int:
        ended = 0
        for row in self.state.conflicts:
            if (row.payment.order_id, row.conflict, row.resolved_at) == (order_id, conflict, None):
                row.resolved_at, row.resolution = at, resolution
                ended += 1
        return ended

    async def add_event(self, event: Contract, *, key: str) -> None:
        self.state.outbox.append(declared(event))

    def set_status(self, order_id: uuid.UUID, status: OrderStatus) -> None:
        record = self.state.orders[order_id]
        view = record.view.model_copy(update={"status": status})
        self.state.orders[order_id] = OrderRecord(view, record.customer_id, record.customer_email)


class FakeOrderStore:
    def __init__(self, database: FakeDatabase) -> None:
        self.database = database
        self.orders = FakeOrders(database)

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[FakeOrders]:
        async with self.database.transaction():
            yield self.orders

    @asynccontextmanager
    async def reading(self) -> AsyncIterator[FakeOrders]:
        yield self.orders

    def joining(self, ctx: MessageContext) -> FakeOrders:
        return self.orders

    async def check(self) -> None:
        return None


class FakeCheckout(_OnTheDatabase):
    async def claim_key(self, customer_id: str, key: str, request_hash: str) -> StoredAnswer | None:
        claimed = self.state.keys.get((customer_id, key))
        if claimed is None:
            self.state.keys[(customer_id, key)] = (request_hash, None)
            return None
        claimed_hash, answer = claimed
        if claimed_hash != request_hash:
            raise IdempotencyConflict(key)
        assert answer is not None, "a claimed key without an answer was committed"
        return StoredAnswer(answer.status, answer.body, answer.order_id, replayed=True)

    async def read_products(self, skus: Sequence[str]) -> dict[str, StockedProduct]:
        return self._on_sale(skus)

    async def take_stock(self, quantities: Mapping[str, int]) -> dict[str, StockedProduct]:
        if self.database.meanwhile:
            self.database.others_commit(self.database.meanwhile.pop(0))
        locked = self._on_sale(sorted(quantities))
        for sku, product in locked.items():
            if product.stock >= quantities[sku]:
                self.state.stock[sku] -= quantities[sku]
        return locked

    def _on_sale(self, skus: Sequence[str]) -> dict[str, StockedProduct]:
        return {
            sku: StockedProduct(sku, product.name, product.price, self.state.stock[sku])
            for sku in skus
            if (product := self.state.products.get(sku)) is not None
        }

    async def insert_order(self, order: OrderCreated) -> None:
        if self.database.taken_numbers:
            raise OrderNumberTaken(self.database.taken_numbers.pop(0))
        assert order.order_number not in self.state.numbers, "uq_orders_number"
        self.state.numbers.add(order.order_number)
        view = placed_order_view(order)
        self.state.orders[order.order_id] = OrderRecord(
            view, order.customer_id, order.customer_email
        )

    async def add_to_outbox(self, *items: OutboxItem) -> None:
        for item in items:
            assert isinstance(item.message, Contract)
            if item.due_at is None:
                self.state.outbox.append(declared(item.message))
            else:
                self.state.scheduled.append((item.due_at, declared(item.message)))

    async def store_answer(self, customer_id: str, key: str, answer: StoredAnswer) -> None:
        claimed_hash, _ = self.state.keys[(customer_id, key)]
        self.state.keys[(customer_id, key)] = (claimed_hash, answer)


class FakeCheckoutStore:
    def __init__(self, database: FakeDatabase) -> None:
        self.database = database

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[FakeCheckout]:
        async with self.database.transaction():
            yield FakeCheckout(self.database)
