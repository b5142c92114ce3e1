"""Messages waiting per consumer group: Kafka's committed offsets against the partitions'
ends, SQS's queue counts."""

from __future__ import annotations

import pytest
from aiokafka import AIOKafkaConsumer, TopicPartition

from shop.messaging import MessagingSettings, Naming
from shop.messaging.testing import eventually, publish_with
from shop.messaging.transports.kafka.topology import group_id
from shop.ops.lag import ConsumerLag, consumer_lag
from shop.ops.settings import OpsSettings

from .conftest import declare, on_broker, order_created

PAYMENT = "payment-service"
NOTIFICATION = "notification-service"


async def consume_and_commit(
    messaging: MessagingSettings, group: str, topic: str, count: int
) -> None:
    """What ``group``'s worker does: read ``count`` messages of ``topic`` and commit."""
    consumer = AIOKafkaConsumer(
        bootstrap_servers=messaging.kafka.bootstrap_servers,
        group_id=group_id(Naming(messaging.namespace), group),
        enable_auto_commit=False,
    )
    partitions = [TopicPartition(topic, p) for p in range(messaging.kafka.partitions)]
    await consumer.start()
    try:
        consumer.assign(partitions)
        await consumer.seek_to_beginning(*partitions)
        read = 0
        while read < count:
            batch = await consumer.getmany(timeout_ms=500)
            read += sum(len(records) for records in batch.values())
        await consumer.commit()
    finally:
        await consumer.stop()


async def test_on_kafka_each_group_waits_for_what_it_has_not_committed(
    request: pytest.FixtureRequest, unique_name: str
) -> None:
    messaging = on_broker("kafka", unique_name, request)
    settings = OpsSettings(environment="test", messaging=messaging)
    topic = Naming(unique_name).topic("order.created")
    await publish_with(messaging, *(order_created() for _ in range(3)))
    await consume_and_commit(messaging, PAYMENT, topic, 3)

    lags = await consumer_lag(settings)

    assert ConsumerLag(PAYMENT, topic, 0) in lags
    assert ConsumerLag(NOTIFICATION, topic, 3) in lags
    # Delay topics are there once a worker declared them; until then nothing waits in them.
    assert all("-retry-" not in lag.source for lag in lags)
    assert {lag.group for lag in lags} == {PAYMENT, NOTIFICATION, "order-service"}


async def test_on_sqs_a_groups_queue_counts_what_waits_in_it(
    request: pytest.FixtureRequest, unique_name: str
) -> None:
    messaging = on_broker("sqs", unique_name, request)
    settings = OpsSettings(environment="test", messaging=messaging)
    await declare(messaging, NOTIFICATION)
    await publish_with(messaging, *(order_created() for _ in range(3)))
    queue = Naming(unique_name).queue(NOTIFICATION)

    lags: list[ConsumerLag] = []

    async def three_waiting() -> bool:
        nonlocal lags
        lags = await consumer_lag(settings)
        return ConsumerLag(NOTIFICATION, queue, 3) in lags

    await eventually(three_waiting, within=20, what="3 messages in the queue")
    # The other groups' queues were never declared: no worker of theirs has run.
    assert [lag.group for lag in lags] == [NOTIFICATION]
