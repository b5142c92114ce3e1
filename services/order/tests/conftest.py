"""Fixtures for order-service tests: a migrated, seeded database of its own per test, the
real application over ASGI, and customer tokens."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Callable
from datetime import timedelta

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker

from shop.database import create_engine, session_factory
from shop.devstack.kafka import KafkaCluster
from shop.messaging import MessagingSettings
from shop.messaging.testing import on_kafka
from shop.order.adapters.catalogue import seed_catalogue
from shop.order.api.app import create_app
from shop.order.bootstrap import postgres_stores
from shop.order.migrations import migrate_async
from shop.order.settings import OrderSettings
from shop.simulators.identity import issue_token

TokenFor = Callable[..., str]


@pytest.fixture
async def order_settings(database_url: str, unique_name: str) -> OrderSettings:
    await migrate_async(database_url)
    return OrderSettings(
        environment="test",
        database_url=database_url,
        jwt_secret="test-secret-of-the-order-service-tests",  # type: ignore[arg-type]
        messaging=MessagingSettings(namespace=unique_name, time_scale=0.01),
        log_json=False,
    )


@pytest.fixture
async def engine(order_settings: OrderSettings) -> AsyncIterator[AsyncEngine]:
    engine = create_engine(order_settings.database_url, pool_size=20)
    try:
        yield engine
    finally:
        await engine.dispose()


@pytest.fixture
async def sessions(engine: AsyncEngine) -> async_sessionmaker[AsyncSession]:
    sessions = session_factory(engine)
    async with sessions() as session, session.begin():
        await seed_catalogue(session)
    return sessions


@pytest.fixture
def app(
    order_settings: OrderSettings, engine: AsyncEngine, sessions: async_sessionmaker[AsyncSession]
) -> FastAPI:
    del sessions  # asked for so that the catalogue is seeded before the app serves
    return create_app(order_settings, postgres_stores(engine))


@pytest.fixture
async def client(app: FastAPI) -> AsyncIterator[httpx.AsyncClient]:
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://order.test") as client:
        yield client


@pytest.fixture
def token_for(order_settings: OrderSettings) -> TokenFor:
    def token(
        customer_id: str = "cust_ayu",
        email: str = "ayu@example.com",
        valid_for: timedelta = timedelta(hours=1),
    ) -> str:
        return issue_token(
            order_settings.jwt_secret.get_secret_value(),
            customer_id,
            email,
            valid_for=valid_for,
            audience=order_settings.jwt_audience,
        )

    return token


@pytest.fixture
def auth(token_for: TokenFor) -> dict[str, str]:
    return {"Authorization": f"Bearer {token_for()}"}


@pytest.fixture
def order_headers(auth: dict[str, str]) -> dict[str, str]:
    """``auth`` and a fresh Idempotency-Key: the headers of a new checkout."""
    return {**auth, "Idempotency-Key": str(uuid.uuid4())}


@pytest.fixture
def kafka_settings(order_settings: OrderSettings, kafka_cluster: KafkaCluster) -> OrderSettings:
    messaging = on_kafka(order_settings.messaging, kafka_cluster.bootstrap_servers)
    relay = order_settings.relay.model_copy(update={"poll_interval": 0.2})
    return order_settings.model_copy(update={"messaging": messaging, "relay": relay})
