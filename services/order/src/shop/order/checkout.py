"""Placing and cancelling orders: each one database transaction that also writes its event
to the outbox. Nothing is published from here; the relay publishes after the commit."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import bindparam, insert, select, update
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.ext.asyncio import AsyncSession

from shop.contracts import OrderCancelled, OrderCreated, OrderLine
from shop.messaging import add
from shop.order.adapters.tables import idempotency_keys, order_items, orders, products
from shop.order.domain.errors import InsufficientStock, OrderNotFound, UnknownProduct
from shop.order.domain.money import CURRENCY, line_total, order_total
from shop.order.domain.numbers import new_order_number
from shop.order.domain.status import OrderStatus, check_transition
from shop.order.queries import load_order_record
from shop.order.views import OrderView


@dataclass(frozen=True, slots=True)
class Customer:
    id: str
    email: str


@dataclass(frozen=True, slots=True)
class Answer:
    """What the checkout answers: the JSON text exactly as stored with the idempotency key,
    so that a replay returns the same bytes as the first answer."""

    status: int
    body: str
    order_id: uuid.UUID
    replayed: bool = False


# Built once: the checkout is the hot path, and building statements per request costs
# more CPU than running them.
_CLAIM_KEY = (
    pg_insert(idempotency_keys)
    .values(
        customer_id=bindparam("customer_id"),
        key=bindparam("key"),
        request_hash=bindparam("request_hash"),
    )
    .on_conflict_do_nothing()
    .returning(idempotency_keys.c.key)
)
_STORED_ANSWER = select(
    idempotency_keys.c.request_hash,
    idempotency_keys.c.response_status,
    idempotency_keys.c.response_body,
    idempotency_keys.c.order_id,
).where(
    idempotency_keys.c.customer_id == bindparam("customer_id"),
    idempotency_keys.c.key == bindparam("key"),
)
_STORE_ANSWER = (
    update(idempotency_keys)
    .where(
        idempotency_keys.c.customer_id == bindparam("b_customer_id"),
        idempotency_keys.c.key == bindparam("b_key"),
    )
    .values(
        order_id=bindparam("order_id"),
        response_status=bindparam("response_status"),
        response_body=bindparam("response_body"),
    )
)
_LOCK_PRODUCTS = (
    select(products.c.sku, products.c.name, products.c.price, products.c.stock)
    .where(products.c.sku.in_(bindparam("skus", expanding=True)), products.c.active)
    .order_by(products.c.sku)
    .with_for_update()
)
_TAKE_STOCK = (
    update(products)
    .where(products.c.sku == bindparam("b_sku"))
    .values(stock=products.c.stock - bindparam("b_quantity"))
)
_INSERT_ORDER = insert(orders)
_INSERT_ITEMS = insert(order_items)


class IdempotencyConflict(Exception):
    """The key was used before with a different request body."""


async def claim_idempotency_key(
    session: AsyncSession, customer: Customer, key: str, request_hash: str
) -> Answer | None:
    """Claim ``key`` for this request in the current transaction, or return the answer
    given to the request that claimed it first.

    A concurrent request with the same key waits on the row until the first commits (then
    replays its answer) or rolls back (then claims the key itself): one order per key.
    """
    claim = {"customer_id": customer.id, "key": key, "request_hash": request_hash}
    if (await session.execute(_CLAIM_KEY, claim)).first() is not None:
        return None
    stored = (await session.execute(_STORED_ANSWER, claim)).one()
    if stored.request_hash != request_hash:
        raise IdempotencyConflict(key)
    return Answer(stored.response_status, stored.response_body, stored.order_id, replayed=True)


async def place_order(
    session: AsyncSession,
    customer: Customer,
    lines: list[tuple[str, int]],
    *,
    idempotency_key: str,
    request_hash: str,
) -> Answer:
    """Reserve stock, record the order and its OrderCreated event, in the caller's
    transaction. Refuses the whole order (no partial reservation) when a line cannot be
    served."""
    replay = await claim_idempotency_key(session, customer, idempotency_key, request_hash)
    if replay is not None:
        return replay
    catalogue = await _reserve_stock(session, lines)
    order_id = uuid.uuid4()
    placed_at = datetime.now(UTC)
    number = new_order_number()
    items = [
        {
            "order_id": order_id,
            "line_no": line_no,
            "sku": sku,
            "name": catalogue[sku]["name"],
            "quantity": quantity,
            "unit_price": catalogue[sku]["price"],
        }
        for line_no, (sku, quantity) in enumerate(lines, start=1)
    ]
    total = order_total((item["quantity"], item["unit_price"]) for item in items)
    await session.execute(
        _INSERT_ORDER,
        {
            "id": order_id,
            "number": number,
            "customer_id": customer.id,
            "customer_email": customer.email,
            "status": OrderStatus.PENDING,
            "total": total,
            "currency": CURRENCY,
            "created_at": placed_at,
            "updated_at": placed_at,
        },
    )
    await session.execute(_INSERT_ITEMS, items)
    event = OrderCreated(
        order_id=order_id,
        order_number=number,
        customer_id=customer.id,
        customer_email=customer.email,
        lines=[
            OrderLine(
                sku=i["sku"], name=i["name"], quantity=i["quantity"], unit_price=i["unit_price"]
            )
            for i in items
        ],
        total=total,
        currency=CURRENCY,
        placed_at=placed_at,
    )
    await add(session, event, key=str(order_id))
    view = OrderView(
        id=order_id,
        number=number,
        status=OrderStatus.PENDING,
        lines=[{**i, "line_total": line_total(i["quantity"], i["unit_price"])} for i in items],
        total=total,
        currency=CURRENCY,
        created_at=placed_at,
    )
    answer = Answer(201, view.model_dump_json(), order_id)
    await session.execute(
        _STORE_ANSWER,
        {
            "b_customer_id": customer.id,
            "b_key": idempotency_key,
            "order_id": order_id,
            "response_status": answer.status,
            "response_body": answer.body,
        },
    )
    return answer


async def _reserve_stock(
    session: AsyncSession, lines: list[tuple[str, int]]
) -> dict[str, dict[str, Any]]:
    """Take the stock of every line or none. Rows are locked in sku order, so concurrent
    checkouts of overlapping products queue up instead of deadlocking."""
    wanted = dict(lines)
    rows = (await session.execute(_LOCK_PRODUCTS, {"skus": sorted(wanted)})).mappings()
    catalogue = {row["sku"]: dict(row) for row in rows}
    unknown = sorted(set(wanted) - catalogue.keys())
    if unknown:
        raise UnknownProduct(unknown)
    for sku in sorted(wanted):
        if catalogue[sku]["stock"] < wanted[sku]:
            raise InsufficientStock(sku, wanted[sku], catalogue[sku]["stock"])
    await session.execute(
        _TAKE_STOCK,
        [{"b_sku": sku, "b_quantity": quantity} for sku, quantity in sorted(wanted.items())],
    )
    return catalogue


async def cancel_order(session: AsyncSession, customer: Customer, order_id: uuid.UUID) -> OrderView:
    """Cancel a pending order of ``customer``: its stock goes back, OrderCancelled goes out."""
    row = (
        await session.execute(
            select(orders.c.status)
            .where(orders.c.id == order_id, orders.c.customer_id == customer.id)
            .with_for_update()
        )
    ).first()
    if row is None:
        raise OrderNotFound(order_id)
    check_transition(OrderStatus(row.status), OrderStatus.CANCELLED)
    items = (
        await session.execute(
            select(order_items.c.sku, order_items.c.quantity)
            .where(order_items.c.order_id == order_id)
            .order_by(order_items.c.sku)
        )
    ).all()
    await session.execute(
        update(products)
        .where(products.c.sku == bindparam("b_sku"))
        .values(stock=products.c.stock + bindparam("b_quantity")),
        [{"b_sku": item.sku, "b_quantity": item.quantity} for item in items],
    )
    cancelled_at = datetime.now(UTC)
    await session.execute(
        update(orders)
        .where(orders.c.id == order_id)
        .values(status=OrderStatus.CANCELLED, cancelled_at=cancelled_at, updated_at=cancelled_at)
    )
    record = await load_order_record(session, order_id)
    await add(
        session,
        OrderCancelled(
            **record.event_facts(),
            reason="cancelled by the customer",
            cancelled_at=cancelled_at,
        ),
        key=str(order_id),
    )
    return record.view
