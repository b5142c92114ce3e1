"""Checkout over HTTP on a real database: the order commits, its event waits in the outbox."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import cast

import asyncpg
import httpx
from sqlalchemy import func, select, text
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker

from shop.contracts import decode
from shop.database import create_engine
from shop.messaging.metrics import Metrics
from shop.messaging.relay import asyncpg_dsn
from shop.messaging.retention import Retention
from shop.messaging.schema import outbox
from shop.messaging.testing import eventually
from shop.order.adapters.checkout import AsyncpgCheckout
from shop.order.adapters.retention import retained_tables
from shop.order.adapters.tables import orders, products
from shop.order.api.app import create_app
from shop.order.bootstrap import postgres_stores
from shop.order.settings import OrderSettings


def checkout_body(*lines: tuple[str, int]) -> dict[str, object]:
    return {"items": [{"sku": sku, "quantity": quantity} for sku, quantity in lines]}


async def place(
    client: httpx.AsyncClient, auth: dict[str, str], body: dict[str, object], key: str | None = None
) -> httpx.Response:
    return await client.post(
        "/v1/orders", json=body, headers={**auth, "Idempotency-Key": key or str(uuid.uuid4())}
    )


async def stock_of(sessions: async_sessionmaker[AsyncSession], sku: str) -> int:
    async with sessions() as session:
        query = select(products.c.stock).where(products.c.sku == sku)
        return int((await session.execute(query)).scalar_one())


async def count(sessions: async_sessionmaker[AsyncSession], table: object) -> int:
    async with sessions() as session:
        return int((await session.execute(select(func.count()).select_from(table))).scalar_one())  # type: ignore[arg-type]


async def test_checkout_answers_201_with_the_order_and_writes_its_event_to_the_outbox(
    client: httpx.AsyncClient, auth: dict[str, str], sessions: async_sessionmaker[AsyncSession]
) -> None:
    before = await stock_of(sessions, "SERUM-NIA-30")
    response = await place(client, auth, checkout_body(("SERUM-NIA-30", 2), ("SUN-SPF50-50", 1)))
    assert response.status_code == 201, response.text
    order = response.json()
    assert response.headers["location"] == f"/v1/orders/{order['id']}"
    assert order["status"] == "pending"
    assert order["total"] == 2 * 89000 + 72000
    assert order["currency"] == "IDR"
    assert [line["sku"] for line in order["lines"]] == ["SERUM-NIA-30", "SUN-SPF50-50"]
    assert order["number"].startswith("SK-")
    assert await stock_of(sessions, "SERUM-NIA-30") == before - 2
    async with sessions() as session:
        rows = (await session.execute(select(outbox).order_by(outbox.c.id))).all()
    # OrderCreated alone: the payment window is payment-service's, nothing is scheduled.
    [created] = rows
    event = decode(created.body)
    assert (event.type, created.due_at) == ("order.created", None)
    assert str(event.payload.order_id) == order["id"]  # type: ignore[attr-defined]
    assert event.key == order["id"]


async def test_the_same_key_and_body_replays_the_answer_without_a_second_order(
    client: httpx.AsyncClient, auth: dict[str, str], sessions: async_sessionmaker[AsyncSession]
) -> None:
    body = checkout_body(("TONER-HA-150", 1))
    first = await place(client, auth, body, key="retry-me")
    again = await place(client, auth, body, key="retry-me")
    assert (again.status_code, again.content) == (first.status_code, first.content)
    assert again.headers["idempotent-replayed"] == "true"
    assert again.headers["location"] == first.headers["location"]
    assert await count(sessions, orders) == 1
    assert await count(sessions, outbox) == 1, "one OrderCreated"


async def test_the_same_key_with_another_body_is_refused_naming_the_conflict(
    client: httpx.AsyncClient, auth: dict[str, str], sessions: async_sessionmaker[AsyncSession]
) -> None:
    await place(client, auth, checkout_body(("TONER-HA-150", 1)), key="once")
    response = await place(client, auth, checkout_body(("TONER-HA-150", 2)), key="once")
    assert response.status_code == 422
    assert response.headers["content-type"] == "application/problem+json"
    assert "Idempotency-Key" in response.json()["detail"]
    assert await count(sessions, orders) == 1


async def test_concurrent_requests_with_one_key_make_exactly_one_order(
    client: httpx.AsyncClient, auth: dict[str, str], sessions: async_sessionmaker[AsyncSession]
) -> None:
    body = checkout_body(("MASK-CLAY-100", 1))
    responses = await asyncio.gather(
        *(place(client, auth, body, key="double-click") for _ in range(8))
    )
    assert {r.status_code for r in responses} == {201}
    assert len({r.json()["id"] for r in responses}) == 1
    assert await count(sessions, orders) == 1


async def test_a_short_line_refuses_the_whole_order_and_reserves_nothing(
    client: httpx.AsyncClient, auth: dict[str, str], sessions: async_sessionmaker[AsyncSession]
) -> None:
    before = await stock_of(sessions, "SERUM-NIA-30")
    response = await place(client, auth, checkout_body(("SERUM-NIA-30", 1), ("SERUM-VITC-20", 81)))
    assert response.status_code == 409
    assert response.json()["sku"] == "SERUM-VITC-20"
    assert await stock_of(sessions, "SERUM-NIA-30") == before
    assert await count(sessions, orders) == 0
    assert await count(sessions, outbox) == 0


_TERMINATE_OTHERS = text(
    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
    " WHERE datname = current_database() AND pid <> pg_backend_pid()"
    " AND application_name = '' AND backend_type = 'client backend'"
)
_WAITING_ON_A_LOCK = text(
    "SELECT count(*) FROM pg_stat_activity"
    " WHERE datname = current_database() AND wait_event_type = 'Lock'"
)


@asynccontextmanager
async def on_one_connection(
    settings: OrderSettings,
) -> AsyncIterator[tuple[AsyncEngine, httpx.AsyncClient]]:
    """order-api on an engine of one pooled connection, so that the checkout after a loss
    meets the same pool slot; its engine and a client of it."""
    engine = create_engine(settings.database_url, pool_size=1)
    transport = httpx.ASGITransport(app=create_app(settings, postgres_stores(engine)))
    try:
        async with httpx.AsyncClient(transport=transport, base_url="http://order.test") as client:
            yield engine, client
    finally:
        await engine.dispose()


async def test_a_connection_lost_mid_checkout_is_a_503_and_the_next_checkout_gets_a_new_one(
    order_settings: OrderSettings, sessions: async_sessionmaker[AsyncSession], auth: dict[str, str]
) -> None:
    async with on_one_connection(order_settings) as (_, client):
        body = checkout_body(("SERUM-NIA-30", 1))
        assert (await place(client, auth, body)).status_code == 201
        async with sessions() as holder, holder.begin():
            # The product held, so that the checkout is under way (waiting for it) when its
            # connection is cut, as a database restart or failover cuts it.
            await holder.execute(
                select(products.c.sku).where(products.c.sku == "SERUM-NIA-30").with_for_update()
            )
            checkout = asyncio.create_task(place(client, auth, body, key="retried-after-loss"))

            async def waiting() -> bool:
                return bool((await holder.execute(_WAITING_ON_A_LOCK)).scalar())

            await eventually(waiting, within=5, what="the checkout waiting for the product")
            await holder.execute(_TERMINATE_OTHERS)
        lost = await checkout
        assert lost.status_code == 503, lost.text
        assert lost.headers["content-type"] == "application/problem+json"
        assert lost.headers["retry-after"] == "1"
        again = await place(client, auth, body, key="retried-after-loss")
        assert again.status_code == 201, again.text


async def test_a_connection_the_database_closed_between_checkouts_is_replaced_without_a_503(
    order_settings: OrderSettings, sessions: async_sessionmaker[AsyncSession], auth: dict[str, str]
) -> None:
    async with on_one_connection(order_settings) as (engine, client):
        body = checkout_body(("SERUM-NIA-30", 1))
        assert (await place(client, auth, body)).status_code == 201
        async with engine.connect() as pooled:
            driver = (await pooled.get_raw_connection()).driver_connection
        async with sessions() as session, session.begin():
            await session.execute(_TERMINATE_OTHERS)  # a restart, between two checkouts

        async def seen_closed() -> bool:
            return bool(driver.is_closed())

        await eventually(seen_closed, within=5, what="the pool's connection seen closed")
        after = await place(client, auth, body, key="after-the-restart")
        assert after.status_code == 201, after.text


class CleanedBetweenStatements:
    """A checkout's connection on which the retention cleanup's round commits right after
    the key's claim, before the checkout reads the answer stored with it: the race of an
    expired key with its own deletion."""

    def __init__(self, connection: asyncpg.Connection, cleanup: Callable[[], Awaitable[object]]):
        self.connection = connection
        self.cleanup = cleanup
        self.cleaned = False

    async def fetchval(self, query: str, *args: object) -> object:
        value = await self.connection.fetchval(query, *args)
        if not self.cleaned:
            self.cleaned = True
            await self.cleanup()
        return value

    async def fetchrow(self, query: str, *args: object) -> asyncpg.Record | None:
        return await self.connection.fetchrow(query, *args)


async def test_a_key_the_cleanup_deletes_between_its_claim_and_its_read_is_claimed_anew(
    order_settings: OrderSettings, sessions: async_sessionmaker[AsyncSession]
) -> None:
    del sessions  # asked for so that the catalogue is seeded
    dsn = asyncpg_dsn(order_settings.database_url)
    checkout_connection, cleanup_connection = await asyncpg.connect(dsn), await asyncpg.connect(dsn)
    try:
        await cleanup_connection.execute(
            "INSERT INTO idempotency_keys (customer_id, key, request_hash, created_at)"
            " VALUES ('cust_ayu', 'expired', 'old-hash', now() - interval '8 days')"
        )
        cleanup = Retention(
            dsn,
            retained_tables(order_settings.retention),
            settings=order_settings.retention,
            metrics=Metrics(),
            name="order-service",
        )
        [keys] = [table for table in cleanup.tables if table.name == "idempotency_keys"]
        connection = CleanedBetweenStatements(
            checkout_connection, lambda: cleanup.clean(cleanup_connection, keys)
        )
        checkout = AsyncpgCheckout(cast("asyncpg.Connection", connection))
        async with checkout_connection.transaction():
            replay = await checkout.claim_key("cust_ayu", "expired", "new-hash")
        assert connection.cleaned
        assert replay is None, "a new claim: the checkout goes on to place the order"
        claimed = await cleanup_connection.fetchval(
            "SELECT request_hash FROM idempotency_keys WHERE key = 'expired'"
        )
        assert claimed == "new-hash"
    finally:
        await checkout_connection.close()
        await cleanup_connection.close()
