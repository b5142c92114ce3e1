"""How many messages wait for each consumer group, per topic or queue.

Kafka: for each partition of the topics a group reads (its event topics and its delay
topics), the end of the partition less the group's committed offset (the partition's start
when it has committed nothing). The end is the high watermark a fetch reports: some
brokers (the embedded Tansu) answer an end-offsets request with the start of the last
batch instead. SQS: the messages of the group's queue, visible or in flight.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

from aiokafka import AIOKafkaConsumer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient

from shop.messaging import MessagingSettings, Naming
from shop.messaging.errors import MessagingError
from shop.messaging.settings import KafkaSettings
from shop.messaging.transports.kafka.security import broker_security, client_options
from shop.messaging.transports.kafka.topology import group_id
from shop.messaging.transports.sqs.client import SqsClient
from shop.ops.bus import BUS_ERRORS, bus_error, require_broker
from shop.ops.errors import OpsError
from shop.ops.services import ConsumerGroupOf, consumer_groups, in_namespace
from shop.ops.settings import OpsSettings

_HIGHWATER_WITHIN: Final = 15.0
"""How long fetching may take to learn every partition's high watermark."""
_SQS_COUNTS: Final = ("ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible")


@dataclass(frozen=True, slots=True)
class ConsumerLag:
    group: str
    source: str
    """The topic (Kafka, an event or a delay topic) or the queue (SQS)."""
    waiting: int
    """Messages published there that the group has not finished with."""


async def consumer_lag(settings: OpsSettings) -> list[ConsumerLag]:
    """Messages waiting for every consumer group of the shop, by group then source."""
    messaging = settings.messaging
    require_broker(messaging)
    try:
        if messaging.transport == "kafka":
            return await kafka_lag(messaging, consumer_groups())
        return await sqs_lag(messaging, consumer_groups())
    except BUS_ERRORS as error:
        raise bus_error(messaging, error) from error


# -- Kafka ------------------------------------------------------------------------------


async def kafka_lag(
    messaging: MessagingSettings, consumers: Sequence[ConsumerGroupOf]
) -> list[ConsumerLag]:
    naming = Naming(messaging.namespace)
    common = kafka_client_options(messaging.kafka)
    admin = AIOKafkaAdminClient(**common)
    # No group: it only fetches, to learn the high watermarks, and commits nothing.
    reader = AIOKafkaConsumer(
        **common, group_id=None, enable_auto_commit=False, fetch_max_wait_ms=100
    )
    try:
        await admin.start()
        await reader.start()
        existing = set(await admin.list_topics())
        topics_of = {
            consumer.group: [
                topic
                for topic in (
                    in_namespace(messaging.namespace, name)
                    for name in (*consumer.event_topics, *consumer.delay_topics)
                )
                if topic in existing
            ]
            for consumer in consumers
        }
        partitions = await _partitions(admin, sorted({t for ts in topics_of.values() for t in ts}))
        every = [tp for tps in partitions.values() for tp in tps]
        ends = await _high_watermarks(reader, every)
        starts: dict[Any, int] = await reader.beginning_offsets(every) if every else {}
        lags = []
        for consumer in consumers:
            wanted = [tp for topic in topics_of[consumer.group] for tp in partitions[topic]]
            committed = await _committed(admin, group_id(naming, consumer.group), wanted)
            for topic in topics_of[consumer.group]:
                waiting = sum(
                    max(0, ends[tp] - committed.get(tp, starts[tp])) for tp in partitions[topic]
                )
                lags.append(ConsumerLag(group=consumer.group, source=topic, waiting=waiting))
        return lags
    finally:
        await reader.stop()
        await admin.close()


def kafka_client_options(kafka: KafkaSettings) -> dict[str, Any]:
    """What the lag reader's admin client and reader are built with: the same login and TLS
    as the services' own clients, which a secured bus requires of every client."""
    return {
        "bootstrap_servers": kafka.bootstrap_servers,
        "client_id": f"{kafka.client_id}-ops",
        "request_timeout_ms": kafka.request_timeout_ms,
        **client_options(broker_security(kafka)),
    }


async def _partitions(admin: Any, topics: list[str]) -> dict[str, list[Any]]:
    if not topics:
        return {}
    described: list[dict[str, Any]] = await admin.describe_topics(topics)
    return {
        str(d["topic"]): sorted(
            (TopicPartition(str(d["topic"]), int(p["partition"])) for p in d["partitions"]),
            key=lambda tp: tp.partition,
        )
        for d in described
    }


async def _high_watermarks(reader: Any, tps: list[Any]) -> dict[Any, int]:
    if not tps:
        return {}
    reader.assign(tps)
    await reader.seek_to_end(*tps)
    deadline = time.monotonic() + _HIGHWATER_WITHIN
    while True:
        ends = {tp: reader.highwater(tp) for tp in tps}
        if all(end is not None for end in ends.values()):
            return {tp: int(end) for tp, end in ends.items()}
        if time.monotonic() > deadline:
            unknown = sorted(f"{tp.topic}[{tp.partition}]" for tp, e in ends.items() if e is None)
            raise OpsError(f"the Kafka broker did not tell the end of {', '.join(unknown)}")
        await reader.getmany(*tps, timeout_ms=250)


async def _committed(admin: Any, group: str, tps: list[Any]) -> dict[Any, int]:
    """The offsets ``group`` committed (none for a partition it never committed in)."""
    if not tps:
        return {}
    offsets: dict[Any, Any] = await admin.list_consumer_group_offsets(group, partitions=tps)
    return {tp: int(meta.offset) for tp, meta in offsets.items() if int(meta.offset) >= 0}


# -- SQS --------------------------------------------------------------------------------


async def sqs_lag(
    messaging: MessagingSettings, consumers: Sequence[ConsumerGroupOf]
) -> list[ConsumerLag]:
    naming = Naming(messaging.namespace)
    client = SqsClient(messaging.sqs)
    await client.start()
    try:
        lags = []
        for consumer in consumers:
            queue = naming.queue(consumer.group)
            try:
                url = await client.queue_url(queue)
            except MessagingError:
                continue  # not declared yet: its worker has never run
            counts = await client.attributes(url, _SQS_COUNTS)
            waiting = sum(int(counts.get(name, 0)) for name in _SQS_COUNTS)
            lags.append(ConsumerLag(group=consumer.group, source=queue, waiting=waiting))
        return lags
    finally:
        await client.close()
