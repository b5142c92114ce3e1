"""Fixtures for payment-service tests: a migrated database of its own per test and the real
application over ASGI."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest
from pydantic import SecretStr
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker

from shop.database import create_engine, session_factory
from shop.messaging import MessagingSettings
from shop.payment.adapters.webhook_events import AsyncpgWebhookStore
from shop.payment.api.app import create_app
from shop.payment.migrations import migrate_async
from shop.payment.settings import PaymentSettings

from .signing import OLD_SECRET, SECRET, SERVER_KEY


@pytest.fixture
async def payment_settings(database_url: str, unique_name: str) -> PaymentSettings:
    await migrate_async(database_url)
    return PaymentSettings(
        environment="test",
        database_url=database_url,
        webhook_secrets=[SecretStr(SECRET), SecretStr(OLD_SECRET)],
        midtrans_server_key=SecretStr(SERVER_KEY),
        messaging=MessagingSettings(namespace=unique_name, time_scale=0.01),
        log_json=False,
    )


@pytest.fixture
async def engine(payment_settings: PaymentSettings) -> AsyncIterator[AsyncEngine]:
    engine = create_engine(payment_settings.database_url, pool_size=20)
    try:
        yield engine
    finally:
        await engine.dispose()


@pytest.fixture
def sessions(engine: AsyncEngine) -> async_sessionmaker[AsyncSession]:
    return session_factory(engine)


@pytest.fixture
async def client(
    payment_settings: PaymentSettings, engine: AsyncEngine
) -> AsyncIterator[httpx.AsyncClient]:
    app = create_app(payment_settings, AsyncpgWebhookStore(engine))
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://payment.test") as client:
        yield client
