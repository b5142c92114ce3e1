"""The shop's own consumer groups, on a real broker, behind a namespace of each test's own;
the services' own databases, made with their own tables, and each service's internal API
served on them as its worker serves it (what ``shop.ops`` reads; never the tables).

``unique_name``, ``postgres_server``, ``kafka_cluster`` and ``aws_endpoint`` come from the
devstack's pytest plugin (``shop.devstack.pytest_plugin``; see libs/devstack/README.md)."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import pytest
from pydantic import SecretStr
from sqlalchemy import MetaData
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker, create_async_engine

from shop.contracts import Envelope, OrderCreated, OrderPaid, encode, examples, wrap
from shop.devstack.aws import AwsEndpoint
from shop.devstack.kafka import KafkaCluster
from shop.devstack.postgres import PostgresServer
from shop.messaging import KafkaSettings, MessagingSettings, Naming, SqsSettings, create_transport
from shop.messaging.asyncapi import discover
from shop.messaging.deadletters import dead_letter_headers
from shop.messaging.health import OperatorRoute
from shop.messaging.internal import dead_letter_routes
from shop.messaging.message import Delivery
from shop.messaging.outbox import message_headers
from shop.messaging.outcome import DeadLetter, Failure
from shop.messaging.pipeline import Pipeline
from shop.messaging.testing import collecting_dead_letters, eventually, operator_port
from shop.messaging.transports.kafka.client import KafkaClient
from shop.messaging.transports.sqs import SqsTransport
from shop.messaging.transports.sqs.client import SqsClient
from shop.notification.internal import internal_routes as notification_routes
from shop.ops.services import shop_services
from shop.ops.settings import OpsSettings
from shop.order.internal import internal_routes as order_routes
from shop.payment.internal import internal_routes as payment_routes

OPERATOR_TOKEN = "the-operator-token-of-the-ops-tests-0123"
INTERNAL_ROUTES: dict[
    str, Callable[[async_sessionmaker[AsyncSession]], Sequence[OperatorRoute]]
] = {
    "order-service": order_routes,
    "payment-service": payment_routes,
    "notification-service": notification_routes,
}


def on_broker(kind: str, namespace: str, request: pytest.FixtureRequest) -> MessagingSettings:
    settings = MessagingSettings(transport=kind, namespace=namespace)
    if kind == "kafka":
        cluster: KafkaCluster = request.getfixturevalue("kafka_cluster")
        settings.kafka = KafkaSettings(bootstrap_servers=cluster.bootstrap_servers, partitions=2)
    else:
        endpoint: AwsEndpoint = request.getfixturevalue("aws_endpoint")
        settings.sqs = SqsSettings(
            endpoint_url=endpoint.url,
            region=endpoint.region,
            access_key_id=endpoint.access_key_id,
            secret_access_key=endpoint.secret_access_key,
        )
    return settings


@pytest.fixture(params=["kafka", "sqs"])
def messaging(request: pytest.FixtureRequest, unique_name: str) -> MessagingSettings:
    """The bus, on each transport in turn, behind this test's namespace."""
    return on_broker(str(request.param), unique_name, request)


def order_created(order_id: uuid.UUID | None = None) -> Envelope[OrderCreated]:
    order_id = order_id or uuid.uuid4()
    example = examples.examples()[OrderCreated]
    assert isinstance(example, OrderCreated)
    return wrap(example.model_copy(update={"order_id": order_id}), key=str(order_id))


def order_paid(order_id: uuid.UUID | None = None) -> Envelope[OrderPaid]:
    order_id = order_id or uuid.uuid4()
    example = examples.examples()[OrderPaid]
    assert isinstance(example, OrderPaid)
    return wrap(example.model_copy(update={"order_id": order_id}), key=str(order_id))


async def declare(messaging: MessagingSettings, *groups: str) -> None:
    """What the workers of ``groups`` declare when they start: their topics or queues."""
    transport = create_transport(messaging)
    await transport.start()
    try:
        # The workers' own routers, as the services describe them to the AsyncAPI documents;
        # declaring reads only a router's subscribers: no session is ever opened.
        routers = [router for service in discover() for router in service.routers]
        for router in routers:
            if router.group in groups:
                await transport.declare(Pipeline(router, sessions=async_sessionmaker()))
    finally:
        await transport.close()


@dataclass(frozen=True)
class Seeded:
    """A dead letter to keep for ``group``, as its consumer would have kept it."""

    group: str
    envelope: Envelope[Any]
    error_type: str
    error_message: str
    attempts: int = 1


async def add_dead_letters(messaging: MessagingSettings, *letters: Seeded) -> None:
    """Keep ``letters`` where and as their consumers keep dead letters (their groups
    declared already)."""
    naming = Naming(messaging.namespace)
    on_kafka = messaging.transport == "kafka"
    now = datetime.now(UTC)
    kept = []
    for letter in letters:
        body = encode(letter.envelope)
        delivery = Delivery(
            body=body,
            headers=message_headers(letter.envelope),
            source=naming.topic(letter.envelope.type) if on_kafka else naming.queue(letter.group),
            attempt=letter.attempts,
            key=letter.envelope.key,
        )
        outcome = DeadLetter(
            Failure(letter.error_type, letter.error_message), letter.attempts, now, now
        )
        kept.append((letter, body, dead_letter_headers(letter.group, delivery, outcome)))
    if on_kafka:
        kafka = KafkaClient(messaging.kafka)
        await kafka.start()
        try:
            for letter, body, headers in kept:
                topic = naming.dead_letters(letter.group)
                await kafka.send(topic, body, headers, letter.envelope.key)
        finally:
            await kafka.close()
        return
    transport = SqsTransport(messaging.sqs, naming)
    sqs = SqsClient(messaging.sqs)
    await transport.start()
    await sqs.start()
    try:
        for letter, body, headers in kept:
            queues = await transport.queues_of(letter.group)
            await sqs.send(queues.dead_letters_url, body.decode(), headers, letter.envelope.key)
    finally:
        await sqs.close()
        await transport.close()


@pytest.fixture
async def service_databases(postgres_server: PostgresServer) -> AsyncIterator[dict[str, str]]:
    """An empty database per service, by service name, dropped after the test."""
    names = {
        service: await postgres_server.create_database(prefix="ops")
        for service in ("order-service", "payment-service", "notification-service")
    }
    try:
        yield {service: postgres_server.url(name) for service, name in names.items()}
    finally:
        for name in names.values():
            await postgres_server.drop_database(name)


async def create_all(url: str, metadata: list[MetaData]) -> None:
    engine = create_async_engine(url.replace("postgresql://", "postgresql+asyncpg://", 1))
    try:
        async with engine.begin() as connection:
            for each in metadata:
                await connection.run_sync(each.create_all)
    finally:
        await engine.dispose()


@asynccontextmanager
async def worker_ports(
    messaging: MessagingSettings,
    databases: dict[str, str] | None = None,
    *,
    dead_letters: int = 0,
) -> AsyncIterator[dict[str, str]]:
    """Each service's worker port as its worker serves it, behind :data:`OPERATOR_TOKEN`:
    its consumers' dead letters on ``messaging``'s bus (collected as its worker collects
    them; once ``dead_letters`` of them are) and, given ``databases``, its internal API on
    its database. The base URL of each, by service name."""
    async with AsyncExitStack() as stack:
        transport = create_transport(messaging)
        await transport.start()
        stack.push_async_callback(transport.close)
        urls = {}
        kept = []
        for service in shop_services():
            collecting = await stack.enter_async_context(
                collecting_dead_letters(transport, service.groups)
            )
            kept.append((collecting, service.groups))
            routes = list(dead_letter_routes(collecting.of, service.groups))
            if databases is not None:
                engine = create_async_engine(
                    databases[service.name].replace("postgresql://", "postgresql+asyncpg://", 1)
                )
                stack.push_async_callback(engine.dispose)
                sessions = async_sessionmaker(engine, expire_on_commit=False)
                routes += INTERNAL_ROUTES[service.name](sessions)
            urls[service.name] = await stack.enter_async_context(
                operator_port(routes, token=OPERATOR_TOKEN)
            )

        async def all_collected() -> bool:
            counted = [await each.count(groups) for each, groups in kept]
            return sum(counted) >= dead_letters

        await eventually(all_collected, within=90, what=f"{dead_letters} dead letters collected")
        yield urls


@pytest.fixture
async def internal_apis(service_databases: dict[str, str]) -> AsyncIterator[dict[str, str]]:
    """Each service's worker port on its database (and the memory bus's dead letters)."""
    async with worker_ports(MessagingSettings(transport="memory"), service_databases) as urls:
        yield urls


def reading(urls: dict[str, str], messaging: MessagingSettings | None = None) -> OpsSettings:
    """Settings of ``shop.ops`` that read the services through ``urls`` (their internal APIs)."""
    return OpsSettings(
        environment="test",
        order_worker_url=urls["order-service"],
        payment_worker_url=urls["payment-service"],
        notification_worker_url=urls["notification-service"],
        operator_token=SecretStr(OPERATOR_TOKEN),
        messaging=messaging or MessagingSettings(transport="memory"),
    )
