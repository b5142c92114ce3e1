"""The Kafka client over FastStream's ``TestKafkaBroker``: publishing goes through
FastStream's public API, so its in-memory broker takes it, with no Kafka, for tests of
what is published (what needs a real broker, topics, order across partitions or commits,
is in ``tests/integration/test_kafka_transport.py``)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from faststream.kafka import KafkaBroker, KafkaMessage, TestKafkaBroker

from shop.contracts import OrderCreated, examples, wrap
from shop.messaging.errors import MessagingError
from shop.messaging.naming import Naming
from shop.messaging.settings import KafkaSettings
from shop.messaging.testing import outgoing
from shop.messaging.transports.kafka.client import KafkaClient
from shop.messaging.transports.kafka.wire import decode_headers

BOOTSTRAP = "kafka.in-memory:9092"


async def test_the_client_publishes_to_faststreams_test_broker_in_memory() -> None:
    naming = Naming("in-memory")
    messages = [
        outgoing(wrap(examples.examples()[OrderCreated], key=f"order-{n}"), naming=naming)
        for n in range(3)
    ]
    broker = KafkaBroker(BOOTSTRAP)
    received: list[tuple[bytes | None, bytes, dict[str, str]]] = []

    @broker.subscriber(naming.topic(OrderCreated), group_id="notification-service")
    async def remember(message: KafkaMessage) -> None:
        raw = message.raw_message
        received.append((raw.key, message.body, decode_headers(raw.headers)))

    async with TestKafkaBroker(broker):
        client = KafkaClient(KafkaSettings(bootstrap_servers=BOOTSTRAP), broker=broker)
        await client.start()
        try:
            handed_over = [
                await client.enqueue(m.topic, m.body, m.headers, m.key) for m in messages
            ]
            await asyncio.gather(*handed_over)
        finally:
            await client.close()

    assert received == [
        (m.key.encode() if m.key else None, m.body, dict(m.headers)) for m in messages
    ]


class PublishesWithoutReceipt:
    """A broker whose publish hands back no delivery future (a middleware that drops it)."""

    async def publish(self, *args: Any, **kwargs: Any) -> None:
        return None


async def test_a_publish_with_no_receipt_from_the_shops_own_broker_is_an_error() -> None:
    # Only a broker the caller gave (FastStream's test broker) delivers without a receipt:
    # from the shop's own, it would let the relay mark a row sent that Kafka never had.
    client = KafkaClient(KafkaSettings(bootstrap_servers=BOOTSTRAP))
    client._broker = PublishesWithoutReceipt()  # type: ignore[assignment]
    with pytest.raises(MessagingError, match="no receipt"):
        await client.enqueue("t", b"{}", {}, "k")
