"""Forgetting a customer in order-service's store, on real Postgres: only the orders and
outbox messages of that exact address change; a customer whose address contains it, or is
contained in it, keeps every byte."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker

from shop.messaging.schema import outbox
from shop.order.adapters.checkout import AsyncpgCheckoutStore
from shop.order.adapters.forgetting import forget_customer, orders_of
from shop.order.adapters.tables import orders
from shop.order.domain.customer import Customer
from shop.order.service_layer.checkout import place_in_transaction


async def place(engine: AsyncEngine, customer: Customer) -> uuid.UUID:
    async with AsyncpgCheckoutStore(engine).transaction() as checkout:
        answer = await place_in_transaction(
            checkout,
            customer,
            [("SERUM-NIA-30", 1)],
            idempotency_key=f"key-{uuid.uuid4()}",
            request_hash="hash",
        )
    return answer.order_id


async def kept(sessions: async_sessionmaker[AsyncSession], email: str) -> list[Any]:
    """Every orders row and outbox body of the customer of ``email``, as stored."""
    async with sessions() as session:
        rows = (await session.execute(select(orders).where(orders.c.customer_email == email))).all()
        keys = [str(row.id) for row in rows]
        bodies = (
            await session.execute(
                select(outbox.c.key, outbox.c.body)
                .where(outbox.c.key.in_(keys))
                .order_by(outbox.c.id)
            )
        ).all()
    assert rows
    assert bodies
    return [tuple(row) for row in rows] + [tuple(body) for body in bodies]


@pytest.mark.parametrize(
    ("forgotten", "other"),
    [
        ("a@example.com", "ana@example.com"),
        ("ayu@example.com", "ayu@example.com.au"),
        ("ayu@example.com.au", "ayu@example.com"),
    ],
)
async def test_forgetting_one_address_leaves_a_similar_customers_orders_and_messages_as_they_were(
    engine: AsyncEngine,
    sessions: async_sessionmaker[AsyncSession],
    forgotten: str,
    other: str,
) -> None:
    placed = await place(engine, Customer(id="cust_forgotten", email=forgotten))
    await place(engine, Customer(id="cust_other", email=other))
    before = await kept(sessions, other)

    async with sessions() as session, session.begin():
        changed = await forget_customer(session, forgotten.upper(), [placed])

    assert (changed.orders, changed.outbox_messages, changed.idempotency_keys) == (1, 1, 1)
    assert await kept(sessions, other) == before
    async with sessions() as session:
        assert await orders_of(session, forgotten) == []
