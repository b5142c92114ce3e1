"""Transport settings for the behavioural suite: one set per transport, each scoped to a
namespace of its own so that tests never see each other's topics and queues.

``unique_name``, ``database_url``, ``kafka_cluster`` and ``aws_endpoint`` come from the
devstack's pytest plugin (``shop.devstack.pytest_plugin``; see libs/devstack/README.md)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker, create_async_engine

from shop.devstack.aws import AwsEndpoint
from shop.devstack.kafka import KafkaCluster
from shop.messaging import KafkaSettings, MessagingSettings, SqsSettings
from shop.messaging.schema import create_tables

TIME_SCALE = 0.01
"""2 s, 4 s, 8 s … become 20 ms, 40 ms, 80 ms …"""


def messaging_settings(
    kind: str, namespace: str, request: pytest.FixtureRequest
) -> MessagingSettings:
    settings = MessagingSettings(
        transport=kind,  # type: ignore[arg-type]
        namespace=namespace,
        time_scale=TIME_SCALE,
        drain_timeout=10,
    )
    if kind == "kafka":
        cluster: KafkaCluster = request.getfixturevalue("kafka_cluster")
        settings.kafka = KafkaSettings(
            bootstrap_servers=cluster.bootstrap_servers, partitions=3, session_timeout_ms=6000
        )
    elif kind == "sqs":
        endpoint: AwsEndpoint = request.getfixturevalue("aws_endpoint")
        settings.sqs = SqsSettings(
            endpoint_url=endpoint.url,
            region=endpoint.region,
            access_key_id=endpoint.access_key_id,
            secret_access_key=endpoint.secret_access_key,
            wait_time_seconds=1,
            visibility_timeout=10,
        )
    return settings


@pytest.fixture(params=["memory", "kafka", "sqs"])
def settings(request: pytest.FixtureRequest, unique_name: str) -> MessagingSettings:
    return messaging_settings(request.param, unique_name, request)


@pytest.fixture
async def sessions(database_url: str) -> AsyncIterator[async_sessionmaker[AsyncSession]]:
    """Sessions on a fresh database that has the outbox and inbox tables."""
    engine = create_async_engine(database_url.replace("postgresql://", "postgresql+asyncpg://"))
    async with engine.begin() as connection:
        await create_tables(connection)
    try:
        yield async_sessionmaker(engine, expire_on_commit=False)
    finally:
        await engine.dispose()


@pytest.fixture
async def kept_in(module_database_url: str) -> AsyncIterator[async_sessionmaker[AsyncSession]]:
    """Sessions on a database the tests of one module share, for what each test keeps
    apart by its own names (the dead letters of its consumer groups): no database made
    per test."""
    engine = create_async_engine(
        module_database_url.replace("postgresql://", "postgresql+asyncpg://")
    )
    async with engine.begin() as connection:
        await create_tables(connection)
    try:
        yield async_sessionmaker(engine, expire_on_commit=False)
    finally:
        await engine.dispose()
