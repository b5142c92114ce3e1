"""Placing an order: one database transaction that claims the idempotency key, reserves
stock, records the order and writes OrderCreated to the outbox. Nothing is published from
here; the relay publishes after the commit.

This is the service's hot path, so it runs on the asyncpg connection underneath
SQLAlchemy's pool, with plain SQL: the ORM's per-statement bookkeeping cost more CPU than
the statements themselves (``make bench-checkout`` measures it). Everything else in the
service goes through SQLAlchemy.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import UTC, datetime

import asyncpg

from shop.contracts import OrderCreated, OrderLine
from shop.messaging import add_on_connection
from shop.order.domain.customer import Customer
from shop.order.domain.errors import InsufficientStock, UnknownProduct
from shop.order.domain.money import CURRENCY, line_total, order_total
from shop.order.domain.numbers import new_order_number
from shop.order.domain.status import OrderStatus
from shop.order.views import OrderView


@dataclass(frozen=True, slots=True)
class Answer:
    """What the checkout answers: the JSON text exactly as stored with the idempotency key,
    so that a replay returns the same bytes as the first answer."""

    status: int
    body: str
    order_id: uuid.UUID
    replayed: bool = False


class IdempotencyConflict(Exception):
    """The key was used before with a different request body."""


ORDER_NUMBER_CONSTRAINT = "uq_orders_number"
"""Violated when a random order number is drawn twice: the caller tries again."""

_CLAIM_KEY = """
INSERT INTO idempotency_keys (customer_id, key, request_hash) VALUES ($1, $2, $3)
ON CONFLICT DO NOTHING RETURNING key"""
_STORED_ANSWER = """
SELECT request_hash, response_status, response_body, order_id FROM idempotency_keys
WHERE customer_id = $1 AND key = $2"""
# Rows are locked in sku order, so concurrent checkouts of overlapping products queue up
# instead of deadlocking.
_LOCK_PRODUCTS = """
SELECT sku, name, price, stock FROM products WHERE sku = ANY($1::varchar[]) AND active
ORDER BY sku FOR UPDATE"""
_TAKE_STOCK = """
UPDATE products SET stock = products.stock - wanted.quantity
FROM unnest($1::varchar[], $2::int[]) AS wanted (sku, quantity)
WHERE products.sku = wanted.sku"""
# The order and its lines in one round trip (the foreign key is checked at the statement's
# end, when the order row exists).
_INSERT_ORDER = """
WITH placed AS (
    INSERT INTO orders (id, number, customer_id, customer_email, status, total, currency,
                        created_at, updated_at)
    VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $8))
INSERT INTO order_items (order_id, line_no, sku, name, quantity, unit_price)
SELECT $1, * FROM unnest($9::smallint[], $10::varchar[], $11::varchar[], $12::int[],
                         $13::bigint[])"""
_STORE_ANSWER = """
UPDATE idempotency_keys SET order_id = $3, response_status = $4, response_body = $5
WHERE customer_id = $1 AND key = $2"""


async def claim_idempotency_key(
    connection: asyncpg.Connection, customer: Customer, key: str, request_hash: str
) -> Answer | None:
    """Claim ``key`` for this request in the current transaction, or return the answer
    given to the request that claimed it first.

    A concurrent request with the same key waits on the row until the first commits (then
    replays its answer) or rolls back (then claims the key itself): one order per key.
    """
    if await connection.fetchval(_CLAIM_KEY, customer.id, key, request_hash) is not None:
        return None
    stored = await connection.fetchrow(_STORED_ANSWER, customer.id, key)
    if stored["request_hash"] != request_hash:
        raise IdempotencyConflict(key)
    return Answer(
        stored["response_status"], stored["response_body"], stored["order_id"], replayed=True
    )


async def place_order(
    connection: asyncpg.Connection,
    customer: Customer,
    lines: list[tuple[str, int]],
    *,
    idempotency_key: str,
    request_hash: str,
) -> Answer:
    """Reserve stock, record the order and its OrderCreated event, in the caller's
    transaction. Refuses the whole order (no partial reservation) when a line cannot be
    served."""
    replay = await claim_idempotency_key(connection, customer, idempotency_key, request_hash)
    if replay is not None:
        return replay
    catalogue = await _reserve_stock(connection, lines)
    order_id = uuid.uuid4()
    placed_at = datetime.now(UTC)
    number = new_order_number()
    ordered = [
        OrderLine(
            sku=sku,
            name=catalogue[sku]["name"],
            quantity=quantity,
            unit_price=catalogue[sku]["price"],
        )
        for sku, quantity in lines
    ]
    total = order_total((line.quantity, line.unit_price) for line in ordered)
    await connection.execute(
        _INSERT_ORDER,
        order_id,
        number,
        customer.id,
        customer.email,
        OrderStatus.PENDING.value,
        total,
        CURRENCY,
        placed_at,
        list(range(1, len(ordered) + 1)),
        [line.sku for line in ordered],
        [line.name for line in ordered],
        [line.quantity for line in ordered],
        [line.unit_price for line in ordered],
    )
    event = OrderCreated(
        order_id=order_id,
        order_number=number,
        customer_id=customer.id,
        customer_email=customer.email,
        lines=ordered,
        total=total,
        currency=CURRENCY,
        placed_at=placed_at,
    )
    await add_on_connection(connection, event, key=str(order_id))
    view = OrderView(
        id=order_id,
        number=number,
        status=OrderStatus.PENDING,
        lines=[
            {**line.model_dump(), "line_total": line_total(line.quantity, line.unit_price)}
            for line in ordered
        ],
        total=total,
        currency=CURRENCY,
        created_at=placed_at,
    )
    answer = Answer(201, view.model_dump_json(), order_id)
    await connection.execute(
        _STORE_ANSWER, customer.id, idempotency_key, order_id, answer.status, answer.body
    )
    return answer


async def _reserve_stock(
    connection: asyncpg.Connection, lines: list[tuple[str, int]]
) -> dict[str, asyncpg.Record]:
    """Take the stock of every line or none."""
    wanted = dict(lines)
    skus = sorted(wanted)
    catalogue = {row["sku"]: row for row in await connection.fetch(_LOCK_PRODUCTS, skus)}
    unknown = [sku for sku in skus if sku not in catalogue]
    if unknown:
        raise UnknownProduct(unknown)
    for sku in skus:
        if catalogue[sku]["stock"] < wanted[sku]:
            raise InsufficientStock(sku, wanted[sku], catalogue[sku]["stock"])
    await connection.execute(_TAKE_STOCK, skus, [wanted[sku] for sku in skus])
    return catalogue
