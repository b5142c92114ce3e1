"""The real parts the console reads, made for one test: the three services' own databases
(migrated by each service's own ``migrate`` command), an order placed in order-service's,
with its ``OrderCreated`` in the outbox, each service's internal API served on its database
as its worker serves it (the console reads the services through them alone), and the ops
settings pointing at all of it.

``postgres_server``, ``kafka_cluster`` and ``unique_name`` come from the devstack's pytest
plugin (see libs/devstack/README.md)."""

from __future__ import annotations

import asyncio
import os
import re
import sys
import uuid
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from pydantic import SecretStr
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from shop.console.domain.passwords import Argon2Cost, hash_password
from shop.console.settings import ConsoleSettings
from shop.contracts import OrderCreated, OrderLine
from shop.database import create_engine, session_factory
from shop.devstack.kafka import KafkaCluster
from shop.devstack.postgres import PostgresServer
from shop.messaging import DeadLetters, MessagingSettings, add
from shop.messaging.deadletter_table import MemoryDeadLetterStore
from shop.messaging.health import OperatorRoute
from shop.messaging.internal import dead_letter_routes
from shop.messaging.testing import on_kafka, operator_port
from shop.messaging.transports import create_transport
from shop.notification.internal import internal_routes as notification_routes
from shop.ops.services import shop_services
from shop.ops.settings import OpsSettings
from shop.order.internal import internal_routes as order_routes
from shop.payment.internal import internal_routes as payment_routes

SERVICES = {
    "order": "order-service",
    "payment": "payment-service",
    "notification": "notification-service",
}


async def _migrate(package: str, url: str) -> None:
    """``python -m shop.<package> migrate``, as an operator brings a database up to date."""
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        f"shop.{package}",
        "migrate",
        env={
            **os.environ,
            f"SHOP_{package.upper()}_DATABASE_URL": url,
            f"SHOP_{package.upper()}_ENVIRONMENT": "test",
        },
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    output, _ = await process.communicate()
    assert process.returncode == 0, f"shop.{package} migrate failed:\n{output.decode()}"


@pytest.fixture
async def service_databases(postgres_server: PostgresServer) -> AsyncIterator[dict[str, str]]:
    """Each service's own, migrated database: ``{"order": url, "payment": …, …}``."""
    names = {package: await postgres_server.create_database() for package in SERVICES}
    urls = {package: postgres_server.url(name) for package, name in names.items()}
    try:
        await asyncio.gather(*(_migrate(package, url) for package, url in urls.items()))
        yield urls
    finally:
        for name in names.values():
            await postgres_server.drop_database(name)


@dataclass(frozen=True)
class PlacedOrder:
    id: uuid.UUID
    number: str
    customer_email: str
    event: OrderCreated


async def place_order(order_database_url: str) -> PlacedOrder:
    """An order as order-service's checkout commits it: its row and, in the same
    transaction, its ``OrderCreated`` in the outbox (keyed by the order's id)."""
    order_id = uuid.uuid4()
    number = f"SK-{order_id.hex[:4].upper()}-{order_id.hex[4:8].upper()}"
    event = OrderCreated(
        order_id=order_id,
        order_number=number,
        customer_id="cust_ayu",
        customer_email="ayu@example.com",
        lines=[
            OrderLine(sku="SERUM-NIA-30", name="Niacinamide serum", quantity=2, unit_price=125_000)
        ],
        total=250_000,
        currency="IDR",
        placed_at=datetime.now(UTC),
    )
    engine = create_engine(order_database_url, pool_size=1)
    try:
        async with session_factory(engine)() as session, session.begin():
            await session.execute(
                text(
                    "INSERT INTO orders (id, number, customer_id, customer_email, status, total, "
                    "currency) VALUES (:id, :number, 'cust_ayu', :email, 'pending', 250000, 'IDR')"
                ),
                {"id": order_id, "number": number, "email": event.customer_email},
            )
            await add(session, event, key=str(order_id))
    finally:
        await engine.dispose()
    return PlacedOrder(order_id, number, event.customer_email, event)


@pytest.fixture
async def placed_order(service_databases: dict[str, str]) -> PlacedOrder:
    return await place_order(service_databases["order"])


@pytest.fixture
def messaging(kafka_cluster: KafkaCluster, unique_name: str) -> MessagingSettings:
    """The bus of this test: the devstack's Kafka, behind a namespace of its own."""
    return on_kafka(
        MessagingSettings(namespace=unique_name, time_scale=0.01, drain_timeout=5),
        kafka_cluster.bootstrap_servers,
    )


OPERATOR_TOKEN = "the-operator-token-of-the-console-tests-0123"
INTERNAL_ROUTES = {
    "order": order_routes,
    "payment": payment_routes,
    "notification": notification_routes,
}


def internal_routes(package: str, database_url: str) -> tuple[list[OperatorRoute], AsyncEngine]:
    """The internal API ``package``'s worker serves on its database, and the engine under it
    (to dispose of)."""
    engine = create_engine(database_url, pool_size=2)
    return list(INTERNAL_ROUTES[package](session_factory(engine))), engine


@pytest.fixture
async def internal_apis(
    service_databases: dict[str, str], messaging: MessagingSettings
) -> AsyncIterator[dict[str, str]]:
    """Each service's worker port, behind :data:`OPERATOR_TOKEN`, as its worker serves it:
    its internal API on its database and its consumers' dead letters on the test's bus.
    Its base URL, by package (``order``, …)."""
    async with AsyncExitStack() as stack:
        transport = create_transport(messaging)
        await transport.start()
        stack.push_async_callback(transport.close)
        urls = {}
        kept = MemoryDeadLetterStore()
        for package, url in service_databases.items():
            routes, engine = internal_routes(package, url)
            stack.push_async_callback(engine.dispose)
            groups = next(s.groups for s in shop_services() if s.name == SERVICES[package])
            # Nothing collects these groups' letters here: a test that makes dead letters
            # runs a worker, which keeps them and serves them on its own port.
            routes += dead_letter_routes(
                lambda group: DeadLetters(kept, transport.dead_letter_courier, group), groups
            )
            urls[package] = await stack.enter_async_context(
                operator_port(routes, token=OPERATOR_TOKEN)
            )
        yield urls


def ops_settings(
    internal: dict[str, str], messaging: MessagingSettings, **more: Any
) -> OpsSettings:
    """Settings of ``shop.ops`` that read the services through ``internal`` (their internal
    APIs' URLs, by package) with the operator token."""
    chosen: dict[str, Any] = {
        "environment": "test",
        "order_worker_url": internal["order"],
        "payment_worker_url": internal["payment"],
        "notification_worker_url": internal["notification"],
        "operator_token": SecretStr(OPERATOR_TOKEN),
        "messaging": messaging,
    }
    return OpsSettings(**(chosen | more))


ADMIN = "operator"
PASSWORD = "a long passphrase of the test operator"
CSRF_FIELD = re.compile(r'name="csrf_token" value="([^"]+)"')


def console_settings(**more: Any) -> ConsoleSettings:
    """The console's settings for a test: a known admin, with a cheap hash."""
    chosen: dict[str, Any] = {
        "environment": "test",
        "admin_user": ADMIN,
        "admin_password_hash": SecretStr(str(hash_password(PASSWORD, cost=Argon2Cost(1, 8, 1)))),
        "session_secret": SecretStr("integration-test-session-secret-of-the-console"),
        "log_json": False,
    }
    return ConsoleSettings(**(chosen | more))


def csrf_of(page: httpx.Response) -> str:
    found = CSRF_FIELD.search(page.text)
    assert found, f"no CSRF token on {page.url}"
    return found.group(1)


@asynccontextmanager
async def logged_in_client(app: FastAPI) -> AsyncIterator[httpx.AsyncClient]:
    """A client of ``app`` logged in as the admin; the app's sources closed after it (an
    ASGI transport runs no lifespan)."""
    try:
        async with httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app), base_url="http://console.test"
        ) as client:
            form = await client.get("/login")
            answer = await client.post(
                "/login",
                data={"username": ADMIN, "password": PASSWORD, "csrf_token": csrf_of(form)},
            )
            assert answer.status_code == 303, answer.text
            yield client
    finally:
        for close in app.state.sources.close:
            await close()
