"""Fixtures for payment-service tests: a migrated database of its own per test and the real
application over ASGI."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import httpx
import pytest
from pydantic import SecretStr
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker

from shop.database import create_engine, session_factory
from shop.devstack.ports import free_port
from shop.devstack.process import ManagedProcess, port_accepts
from shop.messaging import MessagingSettings
from shop.payment.adapters.webhook_events import AsyncpgWebhookStore
from shop.payment.api.app import create_app
from shop.payment.migrations import migrate_async
from shop.payment.settings import PaymentSettings

from .signing import GATEWAY_API_KEY, OLD_SECRET, SECRET, SERVER_KEY


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


@pytest.fixture
async def gateway_url(gateway_server: str) -> str:
    """The development gateway, its ledger emptied for the test."""
    async with httpx.AsyncClient(base_url=gateway_server) as gateway:
        (await gateway.delete("/_simulator/charges")).raise_for_status()
    return gateway_server


@pytest.fixture(scope="session")
def gateway_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The development payment gateway, as a server of its own: its ledger is what
    payment-service's gateway clients ask. No webhook listens to it here (tests post the
    notifications themselves, through the API under test)."""
    port = free_port()
    process = ManagedProcess(
        "gateway",
        [
            sys.executable,
            "-m",
            "shop.simulators.gateway_server",
            "--port",
            str(port),
            "--webhook-url",
            f"http://127.0.0.1:{free_port()}",
            "--midtrans-server-key",
            SERVER_KEY,
            "--api-key",
            GATEWAY_API_KEY,
        ],
        Path(tmp_path_factory.mktemp("gateway")) / "gateway.log",
    )
    process.start()
    try:
        process.wait_until(lambda: port_accepts("127.0.0.1", port), 60, f"listening on {port}")
        yield f"http://127.0.0.1:{port}"
    finally:
        process.stop()
