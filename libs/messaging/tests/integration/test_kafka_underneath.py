"""Each reach-under of ``transports/kafka/underneath.py`` against the installed FastStream
and aiokafka, on a real Kafka-protocol broker: the objects it reaches are there, of the
kind it expects, and FastStream's consume loop still tells a failing fetch only to its
logger, from the subscriber's own task. An upgrade that moves one fails here first."""

from __future__ import annotations

from typing import Any

from aiokafka import AIOKafkaConsumer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient
from aiokafka.errors import KafkaConnectionError, KafkaError
from faststream import AckPolicy
from faststream.kafka import KafkaBroker, KafkaMessage, Topic

from shop.devstack.kafka import KafkaCluster
from shop.messaging.settings import KafkaSettings
from shop.messaging.testing import eventually
from shop.messaging.transports.kafka.client import KafkaClient
from shop.messaging.transports.kafka.underneath import (
    FastStreamLog,
    admin_client,
    committing_consumer,
    group_consumer,
)

WAIT = 30.0


async def started_client(cluster: KafkaCluster) -> KafkaClient:
    client = KafkaClient(
        KafkaSettings(bootstrap_servers=cluster.bootstrap_servers, session_timeout_ms=3_000)
    )
    await client.start()
    return client


async def test_the_broker_holds_an_aiokafka_admin_client_and_builds_aiokafka_consumers(
    kafka_cluster: KafkaCluster, unique_name: str
) -> None:
    client = await started_client(kafka_cluster)
    try:
        admin = admin_client(client.broker)
        assert isinstance(admin, AIOKafkaAdminClient)
        await client.create_topics([unique_name])
        assert unique_name in await admin.list_topics()
        reader = committing_consumer(
            client.broker, group_id="pin-group", client_id="pin", session_timeout_ms=3_000
        )
        assert isinstance(reader, AIOKafkaConsumer)
        assert reader._group_id == "pin-group"  # aiokafka's own state: read to check, not used
        assert reader._enable_auto_commit is False
    finally:
        await client.close()


async def test_a_started_subscriber_runs_an_aiokafka_consumer_that_faststream_never_commits(
    kafka_cluster: KafkaCluster, unique_name: str
) -> None:
    client = await started_client(kafka_cluster)
    topic = unique_name
    handled: list[bytes] = []
    try:
        await client.create_topics([topic])
        group = f"{unique_name}-group"
        subscriber = client.broker.subscriber(
            Topic(topic, declare=False),
            group_id=group,
            ack_policy=AckPolicy.MANUAL,
            auto_offset_reset="earliest",
            persistent=False,
        )

        # The transport's broker runs without FastDepends: a handler is given what the
        # subscriber's decoder returns (FastStream's own decoder: the body).
        @subscriber
        async def remember(body: bytes) -> None:
            handled.append(body)

        assert group_consumer(subscriber) is None  # not started yet
        await subscriber.start()
        try:
            consumer = group_consumer(subscriber)
            assert isinstance(consumer, AIOKafkaConsumer)
            await client.send(topic, b"one", {}, "k")

            async def handled_it() -> bool:
                return handled == [b"one"]

            await eventually(handled_it, within=WAIT, what="the record is handled")
        finally:
            await subscriber.stop()
        # Read once the member left the group: a commit FastStream made after the handler
        # returned, or as the member stopped, is in by now.
        partitions = await client.partitions(topic)
        asking = AIOKafkaConsumer(
            bootstrap_servers=kafka_cluster.bootstrap_servers,
            group_id=group,
            enable_auto_commit=False,
        )
        await asking.start()  # joins no group: it asks the coordinator only
        try:
            committed = [await asking.committed(TopicPartition(topic, p)) for p in partitions]
        finally:
            await asking.stop()
        assert committed == [None] * len(partitions), "FastStream committed"
    finally:
        await client.close()


async def test_a_failing_fetch_is_told_to_the_logger_from_the_subscribers_own_task(
    kafka_cluster: KafkaCluster, unique_name: str
) -> None:
    client = await started_client(kafka_cluster)  # creates the topic
    await client.create_topics([unique_name])
    await client.close()
    log = FastStreamLog()
    broker = KafkaBroker(kafka_cluster.bootstrap_servers, logger=log)
    heard: list[KafkaError] = []
    subscriber = broker.subscriber(
        Topic(unique_name, declare=False),
        group_id=f"{unique_name}-group",
        ack_policy=AckPolicy.MANUAL,
        persistent=False,
    )

    @subscriber
    async def nothing(message: KafkaMessage) -> None:
        pass

    log.watch(subscriber, heard.append)
    await broker.start()
    try:
        consumer = group_consumer(subscriber)
        assert consumer is not None

        async def refused() -> Any:
            raise KafkaConnectionError("the broker went away")

        consumer.getone = refused  # type: ignore[method-assign]

        async def heard_it() -> bool:
            return bool(heard)

        await eventually(heard_it, within=WAIT, what="the fetch failure is heard")
        assert isinstance(heard[0], KafkaConnectionError)
    finally:
        await broker.stop()
