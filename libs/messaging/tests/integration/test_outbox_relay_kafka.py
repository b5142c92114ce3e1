"""The relay against a real Kafka-protocol broker, asserting on what a consumer of the
topic received: exactly once per row with two relays, nothing lost to a kill -9 or to a
broker that was down when the rows were committed."""

from __future__ import annotations

import asyncio
import signal
import sys
import uuid
from collections import defaultdict
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from aiokafka import AIOKafkaConsumer, TopicPartition
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker
from test_outbox_relay import FAST, relaying, unsent, write_rows

from shop.contracts import OrderCreated, decode
from shop.devstack.kafka import KafkaCluster, TansuBroker
from shop.devstack.process import free_port
from shop.messaging import KafkaSettings, Naming, Relay
from shop.messaging.testing import eventually, wait_until
from shop.messaging.transports.kafka import KafkaTransport

SCRIPT = Path(__file__).with_name("relay_process.py")


async def kafka_transport(bootstrap: str, namespace: str) -> KafkaTransport:
    transport = KafkaTransport(
        KafkaSettings(bootstrap_servers=bootstrap, partitions=3), Naming(namespace)
    )
    await transport.start()
    return transport


async def received(bootstrap: str, namespace: str, expected: int) -> dict[str, list[uuid.UUID]]:
    """Every message on the OrderCreated topic, per key in offset order (one partition per
    key, so offset order is the order a consumer sees)."""
    topic = Naming(namespace).topic(OrderCreated)
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
    await consumer.start()
    try:
        partitions = [TopicPartition(topic, p) for p in consumer.partitions_for_topic(topic) or ()]
        consumer.assign(partitions)
        await consumer.seek_to_beginning(*partitions)
        by_key: dict[str, list[uuid.UUID]] = defaultdict(list)
        count = 0
        async with asyncio.timeout(120):
            while count < expected:
                for records in (await consumer.getmany(timeout_ms=500)).values():
                    for record in records:
                        by_key[record.key.decode()].append(decode(record.value).event_id)
                        count += 1
        return by_key
    finally:
        await consumer.stop()


async def drained(sessions: async_sessionmaker[AsyncSession], within: float = 120) -> None:
    async def nothing_unsent() -> bool:
        return await unsent(sessions) == 0

    await eventually(nothing_unsent, within=within, what="the outbox to drain")


def failures(relay: Relay) -> float:
    metric = "messaging_relay_publish_failures_total"
    return relay.metrics.registry.get_sample_value(metric) or 0.0


def first_occurrences(ids: list[uuid.UUID]) -> list[uuid.UUID]:
    return list(dict.fromkeys(ids))


@pytest.fixture
async def transport(kafka_cluster: KafkaCluster, unique_name: str) -> AsyncIterator[KafkaTransport]:
    transport = await kafka_transport(kafka_cluster.bootstrap_servers, unique_name)
    try:
        yield transport
    finally:
        await transport.close()


async def test_two_relays_publish_10000_rows_exactly_once_in_key_order(
    sessions: async_sessionmaker[AsyncSession],
    database_url: str,
    kafka_cluster: KafkaCluster,
    transport: KafkaTransport,
    unique_name: str,
) -> None:
    expected = await write_rows(sessions, keys=100, per_key=100)
    naming = Naming(unique_name)
    other = await kafka_transport(kafka_cluster.bootstrap_servers, unique_name)
    try:
        first = Relay(database_url, transport, naming=naming, settings=FAST)
        second = Relay(database_url, other, naming=naming, settings=FAST)
        async with relaying(first), relaying(second):
            await drained(sessions)
    finally:
        await other.close()
    got = await received(kafka_cluster.bootstrap_servers, unique_name, 10_000)
    assert sum(len(ids) for ids in got.values()) == 10_000
    assert got == expected


async def test_kill_9_of_the_relay_mid_batch_loses_nothing(
    sessions: async_sessionmaker[AsyncSession],
    database_url: str,
    kafka_cluster: KafkaCluster,
    transport: KafkaTransport,
    unique_name: str,
) -> None:
    expected = await write_rows(sessions, keys=50, per_key=200)
    total = 10_000
    process = await asyncio.create_subprocess_exec(
        sys.executable, str(SCRIPT), database_url, kafka_cluster.bootstrap_servers, unique_name
    )

    async def publishing_has_begun() -> bool:
        return await unsent(sessions) <= total - 1000

    try:
        await eventually(publishing_has_begun, within=120, what="the relay to publish")
        process.send_signal(signal.SIGKILL)
    finally:
        if process.returncode is None:
            process.kill()
        await process.wait()
    left = await unsent(sessions)
    assert 0 < left < total, "the relay must die with work left"

    successor = Relay(database_url, transport, naming=Naming(unique_name), settings=FAST)
    async with relaying(successor):
        await wait_until(lambda: successor.is_leader, within=30, what="the successor to lead")
        await drained(sessions)
    got = await received(kafka_cluster.bootstrap_servers, unique_name, total)
    # A batch published but not yet marked goes out again: duplicates, never gaps, and
    # each key's first occurrences in order.
    assert {key: first_occurrences(ids) for key, ids in got.items()} == expected


async def test_rows_committed_while_the_broker_is_down_are_published_when_it_returns(
    sessions: async_sessionmaker[AsyncSession], database_url: str, tmp_path: Path
) -> None:
    port = free_port()
    broker = TansuBroker(tmp_path / "one", port=port)
    bootstrap = broker.start().bootstrap_servers
    transport = await kafka_transport(bootstrap, "outage")
    relay = Relay(database_url, transport, naming=Naming("outage"), settings=FAST)
    try:
        async with relaying(relay):
            await wait_until(lambda: relay.is_leader, what="the relay to lead")
            broker.stop()
            expected = await write_rows(sessions, keys=3, per_key=3)
            await wait_until(
                lambda: failures(relay) >= 1,
                within=120,
                what="a failed publication",
            )
            assert await unsent(sessions) == 9
            # The broker comes back (empty: the embedded one keeps topics in memory).
            broker = TansuBroker(tmp_path / "two", port=port)
            broker.start()
            await (await kafka_transport(bootstrap, "outage")).close()
            await drained(sessions)
        assert await received(bootstrap, "outage", 9) == expected
    finally:
        await transport.close()
        broker.stop()
