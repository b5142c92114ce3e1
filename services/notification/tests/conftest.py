"""Fixtures for notification-service tests: a migrated database of its own per test, the
session's Kafka-protocol broker and SMTP sink, and a way to put order events on the bus.

``database_url``, ``unique_name``, ``kafka_cluster`` and ``smtp_sink`` come from the
devstack's pytest plugin (``shop.devstack.pytest_plugin``; see libs/devstack/README.md)."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import pytest
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker

from shop.contracts import Contract, Envelope, OrderCreated, wrap
from shop.contracts.examples import examples
from shop.database import create_engine, session_factory
from shop.devstack import SmtpSink
from shop.devstack.kafka import KafkaCluster
from shop.messaging import KafkaSettings, MessagingSettings
from shop.messaging.testing import publish_with
from shop.notification.adapters.tables import order_notifications
from shop.notification.migrations import migrate_async
from shop.notification.settings import NotificationSettings, SmtpSettings


@pytest.fixture
async def notification_settings(
    database_url: str, unique_name: str, smtp_sink: SmtpSink, kafka_cluster: KafkaCluster
) -> NotificationSettings:
    await migrate_async(database_url)
    return NotificationSettings(
        environment="test",
        database_url=database_url,
        smtp=SmtpSettings(host=smtp_sink.address.host, port=smtp_sink.address.port, timeout=5),
        messaging=MessagingSettings(
            transport="kafka",
            namespace=unique_name,
            time_scale=0.01,
            kafka=KafkaSettings(
                bootstrap_servers=kafka_cluster.bootstrap_servers,
                partitions=2,
                session_timeout_ms=6000,
            ),
        ),
        log_json=False,
    )


@pytest.fixture
async def engine(notification_settings: NotificationSettings) -> AsyncIterator[AsyncEngine]:
    engine = create_engine(notification_settings.database_url)
    try:
        yield engine
    finally:
        await engine.dispose()


@pytest.fixture
def sessions(engine: AsyncEngine) -> async_sessionmaker[AsyncSession]:
    return session_factory(engine)


@dataclass
class Bus:
    """Publishes order events as order-service's relay would."""

    settings: NotificationSettings

    async def publish(self, *envelopes: Envelope[Contract]) -> None:
        await publish_with(self.settings.messaging, *envelopes)


@pytest.fixture
def bus(notification_settings: NotificationSettings) -> Bus:
    return Bus(notification_settings)


OrderEvent = Callable[..., Envelope[Contract]]


@pytest.fixture
def order_event() -> OrderEvent:
    """An envelope of ``contract`` about a new order (fields of the example overridable)."""

    def make(contract: type[Contract] = OrderCreated, **changes: Any) -> Envelope[Contract]:
        example = examples()[contract]
        fields = {
            **example.model_dump(),
            "order_id": uuid.uuid4(),
            "order_number": f"SK-{uuid.uuid4().hex[:4].upper()}-TEST",
            **changes,
        }
        if "placed_at" in fields:
            fields["placed_at"] = datetime.now(UTC)
        event = contract.model_validate(fields)
        return wrap(event, key=str(fields["order_id"]))

    return make


@pytest.fixture
def recorded(sessions: async_sessionmaker[AsyncSession]) -> Callable[[], Any]:
    """The rows of ``order_notifications``: (order_id, kind) of each e-mail marked sent, or
    (order_id, kind, reference) with ``references=True``."""

    async def rows(*, references: bool = False) -> list[tuple[Any, ...]]:
        table = order_notifications.c
        query = select(table.order_id, table.kind, table.reference)
        async with sessions() as session:
            return [
                (row.order_id, row.kind, row.reference) if references else (row.order_id, row.kind)
                for row in await session.execute(query)
            ]

    return rows
