"""The checkout's transaction on the asyncpg connection underneath SQLAlchemy's pool, in
plain SQL: the Postgres side of :class:`shop.order.ports.CheckoutStore`.

This is the service's hot path: the ORM's per-statement bookkeeping cost more CPU than the
statements themselves (``make bench-checkout`` measures it), so each step is one prepared
statement and one round trip. Everything else in the service goes through SQLAlchemy.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager

import asyncpg
from sqlalchemy.ext.asyncio import AsyncEngine

from shop.contracts import OrderCreated
from shop.database.driver import driver_connection
from shop.messaging import OutboxItem, add_on_connection
from shop.order.domain.errors import IdempotencyConflict, OrderNumberTaken
from shop.order.domain.status import OrderStatus
from shop.order.domain.stock import StockedProduct
from shop.order.ports import StoredAnswer

ORDER_NUMBER_CONSTRAINT = "uq_orders_number"
"""Violated when a random order number is drawn twice."""

_CLAIM_KEY = """
INSERT INTO idempotency_keys (customer_id, key, request_hash) VALUES ($1, $2, $3)
ON CONFLICT DO NOTHING RETURNING key"""
_STORED_ANSWER = """
SELECT request_hash, response_status, response_body, order_id FROM idempotency_keys
WHERE customer_id = $1 AND key = $2"""
_READ_PRODUCTS = """
SELECT sku, name, price, stock FROM products WHERE sku = ANY($1::varchar[]) AND active"""
# The checkout's last statement: its products stay locked only until the commit that follows.
# ``locked`` takes the row locks in sku order whatever plan the UPDATE gets, so that
# checkouts of overlapping baskets queue instead of deadlocking; after a wait it holds the
# rows as the checkout it waited for left them (read committed), and the UPDATE sees them so
# too. NO KEY UPDATE, the lock the UPDATE takes itself, leaves the key-share locks of
# foreign-key checks alone (the order lines' is checked at commit, migration 0005, when
# the rows are this checkout's already). The rows come back as locked,
# before the stock was taken: the use case sees from them which line was short
# (``stock >= quantity`` here is its own rule) and what the order was charged against.
_TAKE_STOCK = """
WITH locked AS MATERIALIZED (
    SELECT sku, name, price, stock FROM products WHERE sku = ANY($1::varchar[]) AND active
    ORDER BY sku FOR NO KEY UPDATE),
taken AS (
    UPDATE products SET stock = products.stock - wanted.quantity
    FROM locked, unnest($1::varchar[], $2::int[]) AS wanted (sku, quantity)
    WHERE products.sku = locked.sku AND wanted.sku = locked.sku
      AND products.stock >= wanted.quantity)
SELECT sku, name, price, stock FROM locked"""
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


class AsyncpgCheckoutStore:
    def __init__(self, engine: AsyncEngine) -> None:
        self.engine = engine

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[AsyncpgCheckout]:
        async with driver_connection(self.engine) as connection, connection.transaction():
            yield AsyncpgCheckout(connection)


class AsyncpgCheckout:
    def __init__(self, connection: asyncpg.Connection) -> None:
        self.connection = connection

    async def claim_key(self, customer_id: str, key: str, request_hash: str) -> StoredAnswer | None:
        connection = self.connection
        while True:
            if await connection.fetchval(_CLAIM_KEY, customer_id, key, request_hash) is not None:
                return None
            stored = await connection.fetchrow(_STORED_ANSWER, customer_id, key)
            if stored is not None:
                break
            # The key had expired, and the retention cleanup deleted it between the two
            # statements (each reads what is committed when it starts): a new claim.
        if stored["request_hash"] != request_hash:
            raise IdempotencyConflict(key)
        return StoredAnswer(
            stored["response_status"], stored["response_body"], stored["order_id"], replayed=True
        )

    async def read_products(self, skus: Sequence[str]) -> dict[str, StockedProduct]:
        return _products(await self.connection.fetch(_READ_PRODUCTS, skus))

    async def take_stock(self, quantities: Mapping[str, int]) -> dict[str, StockedProduct]:
        skus = sorted(quantities)
        wanted = [quantities[sku] for sku in skus]
        return _products(await self.connection.fetch(_TAKE_STOCK, skus, wanted))

    async def insert_order(self, order: OrderCreated) -> None:
        lines = order.lines
        try:
            await self.connection.execute(
                _INSERT_ORDER,
                order.order_id,
                order.order_number,
                order.customer_id,
                order.customer_email,
                OrderStatus.PENDING.value,
                order.total,
                order.currency,
                order.placed_at,
                list(range(1, len(lines) + 1)),
                [line.sku for line in lines],
                [line.name for line in lines],
                [line.quantity for line in lines],
                [line.unit_price for line in lines],
            )
        except asyncpg.UniqueViolationError as error:
            if error.constraint_name == ORDER_NUMBER_CONSTRAINT:
                raise OrderNumberTaken(order.order_number) from error
            raise

    async def add_to_outbox(self, *items: OutboxItem) -> None:
        await add_on_connection(self.connection, *items)

    async def store_answer(self, customer_id: str, key: str, answer: StoredAnswer) -> None:
        await self.connection.execute(
            _STORE_ANSWER, customer_id, key, answer.order_id, answer.status, answer.body
        )


def _products(rows: Sequence[asyncpg.Record]) -> dict[str, StockedProduct]:
    return {
        row["sku"]: StockedProduct(row["sku"], row["name"], row["price"], row["stock"])
        for row in rows
    }
