"""The service's database timeouts, as its bootstrap wires them, on real Postgres: a
checkout that waits too long for a product's lock (another transaction holds it) is
answered 503 with Retry-After instead of hanging, and the same request sent again once the
lock is let go makes the order; a read waiting on a lock is a 503 too; a payment whose
order is locked too long waits in place in the worker, without spending an attempt; an
internal route held up by a lock is a 503 too."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest
from sqlalchemy import select, text
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from shop.contracts import PaymentReceived, encode, wrap
from shop.database import DatabaseTimeouts
from shop.messaging.internal import FORGET_CUSTOMER_PATH
from shop.messaging.message import Delivery
from shop.messaging.outbox import message_headers
from shop.messaging.outcome import Ack
from shop.order.adapters.tables import orders, products
from shop.order.bootstrap import build_app, build_worker
from shop.order.settings import OrderSettings

SHORT = DatabaseTimeouts(lock_seconds=0.3, statement_seconds=5)
"""A lock given up on after 0.3 s, so that the tests do not wait the default 2 s."""
SERUM = "SERUM-NIA-30"
PROBLEM_JSON = "application/problem+json"


@pytest.fixture
def impatient(order_settings: OrderSettings) -> OrderSettings:
    return order_settings.model_copy(update={"database_timeouts": SHORT})


@asynccontextmanager
async def api(settings: OrderSettings) -> AsyncIterator[httpx.AsyncClient]:
    """The API as its bootstrap builds it, started and stopped with its lifespan."""
    app = build_app(settings)
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app), base_url="http://order.test"
        ) as client,
    ):
        yield client


@asynccontextmanager
async def locked(sessions: async_sessionmaker[AsyncSession], statement: str) -> AsyncIterator[None]:
    """Another transaction holding a lock (``statement`` takes it) for the block."""
    async with sessions() as session, session.begin():
        await session.execute(text(statement))
        yield


async def stock_of(sessions: async_sessionmaker[AsyncSession], sku: str) -> int:
    async with sessions() as session:
        return int(
            (
                await session.execute(select(products.c.stock).where(products.c.sku == sku))
            ).scalar_one()
        )


async def test_a_checkout_held_up_by_a_products_lock_is_503_and_goes_through_once_it_is_free(
    impatient: OrderSettings,
    sessions: async_sessionmaker[AsyncSession],
    order_headers: dict[str, str],
) -> None:
    body = {"items": [{"sku": SERUM, "quantity": 1}]}
    before = await stock_of(sessions, SERUM)
    async with api(impatient) as client:
        async with locked(sessions, f"SELECT * FROM products WHERE sku = '{SERUM}' FOR UPDATE"):
            held_up = await client.post("/v1/orders", json=body, headers=order_headers)
        again = await client.post("/v1/orders", json=body, headers=order_headers)

    assert held_up.status_code == 503, held_up.text
    assert held_up.headers["retry-after"] == "1"
    assert held_up.headers["content-type"] == PROBLEM_JSON
    assert held_up.json()["title"] == "Service unavailable"
    assert "gave up waiting (for a lock held by another request" in held_up.json()["detail"]
    assert again.status_code == 201, again.text
    assert "idempotent-replayed" not in again.headers, "the first try left nothing behind"
    assert await stock_of(sessions, SERUM) == before - 1


async def test_reading_the_orders_while_their_table_is_locked_is_503_too(
    impatient: OrderSettings,
    sessions: async_sessionmaker[AsyncSession],
    auth: dict[str, str],
) -> None:
    async with api(impatient) as client:
        async with locked(sessions, "LOCK TABLE orders IN ACCESS EXCLUSIVE MODE"):
            held_up = await client.get("/v1/orders", headers=auth)
        again = await client.get("/v1/orders", headers=auth)

    assert (held_up.status_code, held_up.headers["retry-after"]) == (503, "1"), held_up.text
    assert again.status_code == 200, again.text


def payment_for(order_id: uuid.UUID, amount: int) -> Delivery:
    payment = PaymentReceived(
        payment_id=uuid.uuid4(),
        order_id=order_id,
        provider_event_id=f"evt_{uuid.uuid4().hex[:8]}",
        amount=amount,
        currency="IDR",
        paid_at=datetime.now(UTC),
    )
    envelope = wrap(payment, key=str(order_id))
    return Delivery(
        encode(envelope), message_headers(envelope), "payment.received", key=envelope.key
    )


async def lock_waits_seen(session: AsyncSession, task: asyncio.Task[Any], *, until: int = 2) -> int:
    """How many statements were seen waiting for a lock (each try is a statement of its
    own), watched from ``session``, until ``until`` were or ``task`` ended."""
    seen: set[datetime] = set()
    while len(seen) < until and not task.done():
        # A transaction reads the activity as it was at its first read, unless told not to.
        await session.execute(text("SELECT pg_stat_clear_snapshot()"))
        waiting = await session.execute(
            text(
                "SELECT query_start FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
                "AND datname = current_database() AND pid <> pg_backend_pid()"
            )
        )
        seen.update(waiting.scalars())
        await asyncio.sleep(0.02)
    return len(seen)


async def test_a_payment_held_up_by_its_orders_lock_waits_in_place_without_spending_an_attempt(
    impatient: OrderSettings,
    sessions: async_sessionmaker[AsyncSession],
    order_headers: dict[str, str],
) -> None:
    async with api(impatient) as client:
        placed = await client.post(
            "/v1/orders", json={"items": [{"sku": SERUM, "quantity": 1}]}, headers=order_headers
        )
    assert placed.status_code == 201, placed.text
    order_id = uuid.UUID(placed.json()["id"])
    worker = build_worker(impatient, health_port=0)
    [pipeline] = worker.pipelines
    delivery = payment_for(order_id, placed.json()["total"])
    try:
        async with sessions() as holder, holder.begin():
            await holder.execute(text(f"SELECT * FROM orders WHERE id = '{order_id}' FOR UPDATE"))
            handling = asyncio.create_task(pipeline.process(delivery))
            # Still waiting in place on its first attempt when its second try meets the
            # lock: a lock is the database being slow, not the message's fault.
            waits = await lock_waits_seen(holder, handling)
        outcome = await handling
    finally:
        for close in worker.on_close:
            await close()

    assert waits == 2, outcome
    assert isinstance(outcome, Ack), outcome
    async with sessions() as session:
        status = await session.execute(select(orders.c.status).where(orders.c.id == order_id))
        assert status.scalar_one() == "paid"
    # The relay's own connections are opened with the same timeouts.
    assert worker.relay is not None
    assert "lock_timeout=300" in worker.relay.dsn


async def test_an_internal_route_held_up_by_a_lock_is_503_with_retry_after(
    impatient: OrderSettings,
    sessions: async_sessionmaker[AsyncSession],
    order_headers: dict[str, str],
) -> None:
    async with api(impatient) as client:
        placed = await client.post(
            "/v1/orders", json={"items": [{"sku": SERUM, "quantity": 1}]}, headers=order_headers
        )
    assert placed.status_code == 201, placed.text
    order_id = placed.json()["id"]
    async with sessions() as session:
        email = (
            await session.execute(select(orders.c.customer_email).where(orders.c.id == order_id))
        ).scalar_one()
    # As the worker serves its internal routes, with its own idea of an outage.
    worker = build_worker(impatient, health_port=0)
    assert worker.health is not None
    await worker.health.start()
    try:
        async with (
            httpx.AsyncClient(base_url=f"http://127.0.0.1:{worker.health.port}") as client,
            locked(sessions, f"SELECT * FROM orders WHERE id = '{order_id}' FOR UPDATE"),
        ):
            held_up = await client.post(
                FORGET_CUSTOMER_PATH, json={"email": email, "order_ids": order_id}
            )
    finally:
        await worker.health.stop()
        for close in worker.on_close:
            await close()

    assert held_up.status_code == 503, held_up.text
    assert held_up.headers["Retry-After"] == "1"
    assert held_up.headers["Content-Type"].startswith(PROBLEM_JSON)


async def test_a_request_that_finds_every_pooled_connection_busy_is_503_with_retry_after(
    order_settings: OrderSettings,
    sessions: async_sessionmaker[AsyncSession],
    order_headers: dict[str, str],
    auth: dict[str, str],
) -> None:
    # One connection, held by a checkout waiting on a product's lock: the next request
    # waits for the pool, not for Postgres.
    one_connection = order_settings.model_copy(
        update={
            "db_pool_size": 1,
            "database_timeouts": DatabaseTimeouts(
                lock_seconds=10, statement_seconds=15, pool_seconds=0.3
            ),
        }
    )
    body = {"items": [{"sku": SERUM, "quantity": 1}]}
    async with api(one_connection) as client:
        async with sessions() as holder, holder.begin():
            await holder.execute(text(f"SELECT * FROM products WHERE sku = '{SERUM}' FOR UPDATE"))
            checkout = asyncio.create_task(
                client.post("/v1/orders", json=body, headers=order_headers)
            )
            assert await lock_waits_seen(holder, checkout, until=1) == 1
            queued = await client.get("/v1/orders", headers=auth)
        placed = await checkout

    assert queued.status_code == 503, queued.text
    assert queued.headers["retry-after"] == "1"
    assert queued.headers["content-type"] == PROBLEM_JSON
    assert placed.status_code == 201, placed.text
