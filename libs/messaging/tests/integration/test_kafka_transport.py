"""What only the Kafka transport has to get right, against a real Kafka-protocol broker:
topics, per-key order across partitions, commits that never pass an unfinished message,
delay topics that hold a retry without holding anything else, dead-letter markers, a
message too large to keep whole, and consumers that are FastStream subscribers.

The behaviour every transport shares is in ``test_transport_behaviour.py``.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient
from faststream import AckPolicy
from faststream.kafka import KafkaBroker
from faststream.kafka.subscriber.usecase import LogicSubscriber

from shop.contracts import ALL_CONTRACTS, OrderCreated, wrap
from shop.contracts.examples import examples
from shop.devstack.kafka import KafkaCluster
from shop.messaging import headers as h
from shop.messaging.context import MessageContext
from shop.messaging.deadletters import StoredDeadLetter
from shop.messaging.errors import PermanentError
from shop.messaging.headers import DEAD_LETTER_RESOLVES
from shop.messaging.message import OutgoingMessage
from shop.messaging.naming import Naming
from shop.messaging.pipeline import Pipeline
from shop.messaging.settings import KafkaSettings
from shop.messaging.subscriber import Router
from shop.messaging.testing import CollectedDeadLetters, eventually, outgoing, wait_until
from shop.messaging.transports.base import ConsumerOptions
from shop.messaging.transports.kafka import (
    KafkaConsumer,
    KafkaTransport,
    delay_seconds,
    group_id,
)
from shop.messaging.transports.kafka.wire import PUBLISHER_HEADERS, decode_headers

GROUP = "order-service"
SESSION_TIMEOUT_MS = 3_000
"""Short, because this broker holds a group's first join for half of it and a re-join
after a member left for almost two sessions."""
WAIT = 30.0


def kafka_settings(cluster: KafkaCluster, *, partitions: int) -> KafkaSettings:
    return KafkaSettings(
        bootstrap_servers=cluster.bootstrap_servers,
        partitions=partitions,
        session_timeout_ms=SESSION_TIMEOUT_MS,
    )


@asynccontextmanager
async def started(settings: KafkaSettings, naming: Naming) -> AsyncIterator[KafkaTransport]:
    transport = KafkaTransport(settings, naming)
    try:
        await transport.start()
        yield transport
    finally:
        await transport.close()


@asynccontextmanager
async def running(consumer: KafkaConsumer) -> AsyncIterator[KafkaConsumer]:
    task = asyncio.create_task(consumer.run())
    try:
        yield consumer
    finally:
        consumer.stop()
        await asyncio.wait_for(task, WAIT)


@asynccontextmanager
async def admin_client(cluster: KafkaCluster) -> AsyncIterator[AIOKafkaAdminClient]:
    admin = AIOKafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers)
    try:
        await admin.start()
        yield admin
    finally:
        await admin.close()


def order_created(naming: Naming, key: str) -> OutgoingMessage:
    return outgoing(wrap(examples()[OrderCreated], key=key), naming=naming)


async def partition_counts(cluster: KafkaCluster, topics: list[str]) -> dict[str, int]:
    async with admin_client(cluster) as admin:
        existing = set(await admin.list_topics())
        described = await admin.describe_topics([t for t in topics if t in existing])
    return {d["topic"]: len(d["partitions"]) for d in described}


async def read_all(
    cluster: KafkaCluster, topic: str, partitions: int
) -> list[tuple[int, bytes, dict[str, str]]]:
    """(partition, value, headers) of each record of ``topic``, read without a group."""
    consumer = AIOKafkaConsumer(
        bootstrap_servers=cluster.bootstrap_servers, enable_auto_commit=False
    )
    tps = [TopicPartition(topic, p) for p in range(partitions)]
    records: list[tuple[int, bytes, dict[str, str]]] = []
    try:
        await consumer.start()
        consumer.assign(tps)
        await consumer.seek_to_beginning(*tps)
        while not await at_end(consumer, tps):
            batch = await consumer.getmany(timeout_ms=250)
            records.extend(
                (r.partition, r.value, {k: v.decode() for k, v in r.headers})
                for rs in batch.values()
                for r in rs
            )
    finally:
        await consumer.stop()
    return records


async def at_end(consumer: AIOKafkaConsumer, tps: list[TopicPartition]) -> bool:
    # The high watermark of the last fetch: this broker's end-offsets answer lags behind.
    for tp in tps:
        highwater = consumer.highwater(tp)
        if highwater is None or await consumer.position(tp) < highwater:
            return False
    return True


async def committed_offset(cluster: KafkaCluster, group: str, topic: str) -> int | None:
    """The committed offset of partition 0 of ``topic``, asked without joining ``group``."""
    consumer = AIOKafkaConsumer(
        bootstrap_servers=cluster.bootstrap_servers, group_id=group, enable_auto_commit=False
    )
    try:
        await consumer.start()
        offset: int | None = await consumer.committed(TopicPartition(topic, 0))
    finally:
        await consumer.stop()
    return offset


@dataclass(frozen=True)
class Handled:
    key: str
    attempt: int
    at: float


async def test_start_creates_every_contract_topic_once_with_the_configured_partitions(
    kafka_cluster: KafkaCluster, unique_name: str
) -> None:
    naming = Naming(unique_name)
    topics = [naming.topic(contract) for contract in ALL_CONTRACTS]

    async with started(kafka_settings(kafka_cluster, partitions=3), naming):
        assert await partition_counts(kafka_cluster, topics) == dict.fromkeys(topics, 3)
    # Starting again finds them there and leaves them as they are.
    async with started(kafka_settings(kafka_cluster, partitions=5), naming):
        assert await partition_counts(kafka_cluster, topics) == dict.fromkeys(topics, 3)


async def test_declare_creates_the_delay_and_dead_letter_topics_of_the_group(
    kafka_cluster: KafkaCluster, unique_name: str
) -> None:
    naming = Naming(unique_name)
    router = Router(GROUP)

    @router.subscriber(OrderCreated, transactional=False, max_attempts=4)
    async def remember(event: OrderCreated, context: MessageContext) -> None: ...

    async with started(kafka_settings(kafka_cluster, partitions=2), naming) as transport:
        await transport.declare(Pipeline(router))
        await transport.declare(Pipeline(router))

    assert delay_seconds(router) == [0.0, 2.0, 4.0, 8.0]
    wanted = [naming.delay_topic(GROUP, s) for s in (0, 2, 4, 8)] + [naming.dead_letters(GROUP)]
    assert await partition_counts(kafka_cluster, wanted) == dict.fromkeys(wanted, 2)


async def test_records_carry_the_producers_headers_and_faststreams_two_which_reading_drops(
    kafka_cluster: KafkaCluster, unique_name: str
) -> None:
    # Publishing goes through FastStream's own publish, which adds headers of its own: an
    # upgrade that adds another would put it in every retry and dead letter, so it fails
    # here first.
    naming = Naming(unique_name)
    message = order_created(naming, "order-1")

    async with started(kafka_settings(kafka_cluster, partitions=1), naming) as transport:
        await transport.publish([message])

    [(_, body, headers)] = await read_all(kafka_cluster, message.topic, 1)
    assert body == message.body
    added = {name: value for name, value in headers.items() if name not in message.headers}
    assert set(added) == PUBLISHER_HEADERS
    assert added == {"content-type": "", "correlation_id": message.headers[h.CORRELATION_ID]}
    assert decode_headers([(k, v.encode()) for k, v in headers.items()]) == message.headers


async def test_publish_keeps_the_order_of_each_key_across_partitions(
    kafka_cluster: KafkaCluster, unique_name: str
) -> None:
    naming = Naming(unique_name)
    topic = naming.topic(OrderCreated)
    keys = [f"order-{n}" for n in range(12)]
    messages = [
        OutgoingMessage(topic=topic, key=key, body=f"{key}/{seq}".encode())
        for seq in range(25)
        for key in keys
    ]

    async with started(kafka_settings(kafka_cluster, partitions=4), naming) as transport:
        for start in range(0, len(messages), 100):
            await transport.publish(messages[start : start + 100])

    records = await read_all(kafka_cluster, topic, 4)
    assert len(records) == len(messages)
    partitions_of_key: dict[str, set[int]] = {}
    sequence_of_key: dict[str, list[int]] = {}
    for partition, value, _ in records:
        key, seq = value.decode().split("/")
        partitions_of_key.setdefault(key, set()).add(partition)
        sequence_of_key.setdefault(key, []).append(int(seq))
    assert all(len(p) == 1 for p in partitions_of_key.values())
    assert len(set().union(*partitions_of_key.values())) > 1
    assert sequence_of_key == {key: list(range(25)) for key in keys}


async def test_offsets_are_never_committed_past_an_unfinished_message(
    kafka_cluster: KafkaCluster, unique_name: str
) -> None:
    naming = Naming(unique_name)
    topic = naming.topic(OrderCreated)
    group = group_id(naming, GROUP)
    fast_keys = [f"fast-{n}" for n in range(5)]
    handled: list[Handled] = []
    release_slow = asyncio.Event()

    router = Router(GROUP)

    @router.subscriber(OrderCreated, transactional=False)
    async def remember(event: OrderCreated, context: MessageContext) -> None:
        key = context.envelope.key
        if key == "slow":
            await release_slow.wait()
        handled.append(Handled(key, context.attempt, time.monotonic()))

    options = ConsumerOptions(max_in_flight=8, drain_timeout=0.2)
    async with started(kafka_settings(kafka_cluster, partitions=1), naming) as transport:
        pipeline = Pipeline(router)
        await transport.declare(pipeline)
        # One partition: the slow message at offset 0, the fast ones after it.
        await transport.publish([order_created(naming, k) for k in ["slow", *fast_keys]])

        async with running(transport.consumer(pipeline, options)):
            await wait_until(
                lambda: len(handled) == len(fast_keys), within=WAIT, what="the fast ones are done"
            )

            async def committed() -> bool:
                return await committed_offset(kafka_cluster, group, topic) is not None

            await eventually(committed, within=WAIT, what="an offset is committed")
            await asyncio.sleep(1.0)  # a couple more commit rounds
            assert await committed_offset(kafka_cluster, group, topic) == 0
        # Stopped with the slow one still running: it was abandoned, not committed.
        assert await committed_offset(kafka_cluster, group, topic) == 0

        release_slow.set()
        handled.clear()
        async with running(transport.consumer(pipeline, options)):
            await wait_until(
                lambda: any(x.key == "slow" for x in handled),
                within=WAIT,
                what="the slow one comes again",
            )
            await wait_until(
                lambda: len(handled) == 1 + len(fast_keys), within=WAIT, what="all came again"
            )

            async def all_committed() -> bool:
                return await committed_offset(kafka_cluster, group, topic) == 1 + len(fast_keys)

            await eventually(all_committed, within=WAIT, what="everything is committed")
    assert [x.attempt for x in handled] == [1] * (1 + len(fast_keys))


async def test_a_backlog_is_committed_as_it_is_worked_off_even_with_every_slot_taken(
    kafka_cluster: KafkaCluster, unique_name: str
) -> None:
    naming = Naming(unique_name)
    topic = naming.topic(OrderCreated)
    group = group_id(naming, GROUP)
    keys = [f"order-{n:02d}" for n in range(30)]
    handled: list[str] = []
    release = asyncio.Event()

    router = Router(GROUP)

    @router.subscriber(OrderCreated, transactional=False)
    async def remember(event: OrderCreated, context: MessageContext) -> None:
        if len(handled) >= 10:
            await release.wait()  # from the eleventh on, both slots stay taken
        handled.append(context.envelope.key)

    options = ConsumerOptions(max_in_flight=2, drain_timeout=0.2)
    async with started(kafka_settings(kafka_cluster, partitions=1), naming) as transport:
        pipeline = Pipeline(router)
        await transport.declare(pipeline)
        await transport.publish([order_created(naming, k) for k in keys])

        async with running(transport.consumer(pipeline, options)):
            await wait_until(lambda: len(handled) == 10, within=WAIT, what="the first ten are done")

            # The rest of the backlog is waiting for a slot; what is done still commits.
            async def first_ten_committed() -> bool:
                return await committed_offset(kafka_cluster, group, topic) == 10

            await eventually(first_ten_committed, within=WAIT, what="the first ten committed")
            release.set()
            await wait_until(
                lambda: len(handled) == len(keys), within=WAIT, what="the backlog is done"
            )

            async def all_committed() -> bool:
                return await committed_offset(kafka_cluster, group, topic) == len(keys)

            await eventually(all_committed, within=WAIT, what="the whole backlog committed")
    assert handled == keys


async def test_stop_returns_while_every_slot_is_taken(
    kafka_cluster: KafkaCluster, unique_name: str
) -> None:
    naming = Naming(unique_name)
    started_keys: list[str] = []

    router = Router(GROUP)

    @router.subscriber(OrderCreated, transactional=False)
    async def hang(event: OrderCreated, context: MessageContext) -> None:
        started_keys.append(context.envelope.key)
        await asyncio.Event().wait()

    # The only slot hangs, so the consumer waits for a free one to hand out the next.
    options = ConsumerOptions(max_in_flight=1, drain_timeout=0.2)
    async with started(kafka_settings(kafka_cluster, partitions=1), naming) as transport:
        pipeline = Pipeline(router)
        await transport.declare(pipeline)
        await transport.publish([order_created(naming, k) for k in ("first", "second")])
        consumer = transport.consumer(pipeline, options)
        task = asyncio.create_task(consumer.run())
        try:
            await wait_until(
                lambda: started_keys == ["first"], within=WAIT, what="the first one hangs"
            )
            assert consumer.ready
        finally:
            consumer.stop()
            await asyncio.wait_for(task, WAIT)
        assert not consumer.ready
        assert started_keys == ["first"]


async def test_a_retry_waiting_in_a_delay_topic_holds_no_handler_slot(
    kafka_cluster: KafkaCluster, unique_name: str
) -> None:
    naming = Naming(unique_name)
    handled: list[Handled] = []
    failed_at: list[float] = []

    router = Router(GROUP)

    @router.subscriber(OrderCreated, transactional=False, base_delay=2.0, max_attempts=3)
    async def remember(event: OrderCreated, context: MessageContext) -> None:
        key = context.envelope.key
        if key == "flaky" and context.attempt == 1:
            failed_at.append(time.monotonic())
            raise ConnectionError("payment provider unreachable")
        handled.append(Handled(key, context.attempt, time.monotonic()))

    # One message at a time: if the waiting retry took the slot, nothing else could run.
    options = ConsumerOptions(max_in_flight=1, drain_timeout=1.0)
    async with started(kafka_settings(kafka_cluster, partitions=1), naming) as transport:
        pipeline = Pipeline(router)
        await transport.declare(pipeline)
        async with running(transport.consumer(pipeline, options)):
            await transport.publish([order_created(naming, "flaky")])
            await wait_until(lambda: bool(failed_at), within=WAIT, what="the first try fails")
            await transport.publish([order_created(naming, f"steady-{n}") for n in range(3)])
            await wait_until(lambda: len(handled) == 4, within=WAIT, what="the retry comes back")

    assert [(x.key, x.attempt) for x in handled] == [
        ("steady-0", 1),
        ("steady-1", 1),
        ("steady-2", 1),
        ("flaky", 2),
    ]
    assert handled[-1].at - failed_at[0] >= 2.0 * 0.8  # not before it was due (2 s, -20 %)


async def test_dead_letters_are_collected_redriven_to_their_group_and_purged(
    kafka_cluster: KafkaCluster, unique_name: str
) -> None:
    naming = Naming(unique_name)
    refused = {"refused-a", "refused-b"}
    handled: list[Handled] = []

    router = Router(GROUP)

    @router.subscriber(OrderCreated, transactional=False)
    async def remember(event: OrderCreated, context: MessageContext) -> None:
        key = context.envelope.key
        if key in refused:
            raise PermanentError(f"{key} breaks a business rule")
        handled.append(Handled(key, context.attempt, time.monotonic()))

    async with started(kafka_settings(kafka_cluster, partitions=2), naming) as transport:
        pipeline = Pipeline(router)
        await transport.declare(pipeline)
        kept = CollectedDeadLetters(transport, GROUP)
        sent = [order_created(naming, k) for k in sorted(refused)]

        async def both_dead() -> bool:
            return len(await kept.list()) == 2

        async with running(transport.consumer(pipeline, ConsumerOptions())):
            await transport.publish(sent)
            await eventually(both_dead, within=WAIT, what="both are dead letters")
            letters = {x.headers[h.EVENT_ID]: x for x in await kept.list()}
            for message in sent:
                letter = letters[message.headers[h.EVENT_ID]]
                assert letter.body == message.body
                assert dict(letter.headers) == dict(message.headers)
                assert letter.source == naming.topic(OrderCreated)
                assert (letter.error_type, letter.attempts) == ("PermanentError", 1)
                partition, offset, timestamp = letter.transport_id.split("-")
                assert partition.isdigit()
                assert offset.isdigit()
                assert timestamp.isdigit()
            first, second = (letters[m.headers[h.EVENT_ID]] for m in sent)

            refused.discard("refused-a")
            await kept.letters.redrive_one(first.id)
            await wait_until(
                lambda: bool(handled), within=WAIT, what="the redriven letter is handled"
            )
            assert [(x.key, x.attempt) for x in handled] == [("refused-a", 1)]
            assert [x.id for x in await kept.list()] == [second.id]

            # Still refused: dead again, from its original topic, its attempts counted anew.
            await kept.letters.redrive_one(second.id)

            async def dead_again() -> bool:
                return [x.id for x in await kept.list()] not in ([second.id], [])

            await eventually(dead_again, within=WAIT, what="the second one is dead again")
            (again,) = await kept.list()
            assert again.body == second.body
            assert (again.source, again.attempts) == (naming.topic(OrderCreated), 1)

            assert await kept.letters.purge() == 1
            assert await kept.list() == []

    assert await kept.letters.list() == []
    # Kafka cannot delete one record: the topic keeps its copies (no markers) until its
    # retention, which the transport set when it made the topic.
    records = await read_all(kafka_cluster, naming.dead_letters(GROUP), 2)
    assert len(records) == 3
    assert not any(DEAD_LETTER_RESOLVES in headers for _, _, headers in records)


async def test_each_consumer_is_a_faststream_subscriber_of_the_transports_broker(
    kafka_cluster: KafkaCluster, unique_name: str
) -> None:
    naming = Naming(unique_name)
    router = Router(GROUP)

    @router.subscriber(OrderCreated, transactional=False)
    async def remember(event: OrderCreated, context: MessageContext) -> None:
        pass

    async with started(kafka_settings(kafka_cluster, partitions=1), naming) as transport:
        assert isinstance(transport.broker, KafkaBroker)
        pipeline = Pipeline(router)
        await transport.declare(pipeline)
        consumer = transport.consumer(pipeline, ConsumerOptions())
        async with running(consumer):
            await wait_until(lambda: consumer.ready, within=WAIT, what="the consumer runs")
            subscriber = consumer.subscriber
            assert isinstance(subscriber, LogicSubscriber)
            assert subscriber in transport.broker.subscribers
            assert subscriber.group_id == group_id(naming, GROUP)
            assert set(subscriber.topic_names) == {
                naming.topic(OrderCreated),
                *(naming.delay_topic(GROUP, s) for s in delay_seconds(router)),
            }
            # Offsets are the consumer's to commit: FastStream never acknowledges them.
            assert subscriber.ack_policy is AckPolicy.MANUAL


async def test_a_message_larger_than_the_producer_allows_ends_as_one_truncated_dead_letter(
    kafka_cluster: KafkaCluster, unique_name: str
) -> None:
    naming = Naming(unique_name)
    topic = naming.topic(OrderCreated)
    handled: list[str] = []
    router = Router(GROUP)

    @router.subscriber(OrderCreated, transactional=False)
    async def remember(event: OrderCreated, context: MessageContext) -> None:
        handled.append(context.envelope.key)

    huge = b'{"not": "an envelope", "padding": "' + b"x" * 2_000_000 + b'"}'
    after = order_created(naming, "after-the-huge-one")
    settings = kafka_settings(kafka_cluster, partitions=1)
    assert len(huge) > settings.max_request_size
    async with started(settings, naming) as transport:
        pipeline = Pipeline(router)
        await transport.declare(pipeline)
        # Straight onto the topic, as a producer with a higher limit could.
        producer = AIOKafkaProducer(
            bootstrap_servers=kafka_cluster.bootstrap_servers, max_request_size=4 * 1024 * 1024
        )
        await producer.start()
        try:
            await producer.send_and_wait(
                topic,
                huge,
                key=b"huge",
                headers=[(h.MESSAGE_TYPE, OrderCreated.message_type.encode())],
            )
        finally:
            await producer.stop()
        await transport.publish([after])
        kept = CollectedDeadLetters(transport, GROUP)

        async def one_dead_letter() -> bool:
            return len(await kept.list()) == 1

        async with running(transport.consumer(pipeline, ConsumerOptions())):
            await wait_until(lambda: bool(handled), within=WAIT, what="the next one is handled")
            await eventually(one_dead_letter, within=WAIT, what="the huge one is a dead letter")

            async def committed_past_both() -> bool:
                return await committed_offset(kafka_cluster, group_id(naming, GROUP), topic) == 2

            await eventually(committed_past_both, within=WAIT, what="offsets move past it")
        (letter,) = await kept.list()
        assert letter.truncated
        assert letter.whole_body_size == len(huge)
        assert huge.startswith(letter.body)
        assert 0 < len(letter.body) < settings.max_request_size
        assert letter.key == "huge"
        assert letter.error_type == "UndecodableMessage", letter.error_message
        assert handled == ["after-the-huge-one"]
        with pytest.raises(ValueError, match="truncated"):
            await kept.letters.redrive_one(letter.id)


async def test_records_that_faststream_could_not_parse_still_reach_the_pipeline(
    kafka_cluster: KafkaCluster, unique_name: str
) -> None:
    naming = Naming(unique_name)
    topic = naming.topic(OrderCreated)
    handled: list[str] = []
    router = Router(GROUP)

    @router.subscriber(OrderCreated, transactional=False)
    async def remember(event: OrderCreated, context: MessageContext) -> None:
        handled.append(context.envelope.key)

    good = order_created(naming, "after-the-odd-ones")
    type_header = (h.MESSAGE_TYPE, OrderCreated.message_type.encode())
    odd = {
        "null-header": (order_created(naming, "null-header").body, [type_header, ("x-null", None)]),
        "not-utf8-header": (
            order_created(naming, "not-utf8-header").body,
            [type_header, ("x-bytes", b"\xff\xfe")],
        ),
        "json-that-is-not": (b"{not json", [type_header, ("content-type", b"application/json")]),
    }
    async with started(kafka_settings(kafka_cluster, partitions=1), naming) as transport:
        pipeline = Pipeline(router)
        await transport.declare(pipeline)
        producer = AIOKafkaProducer(bootstrap_servers=kafka_cluster.bootstrap_servers)
        await producer.start()
        try:
            for key, (body, headers) in odd.items():
                await producer.send_and_wait(topic, body, key=key.encode(), headers=headers)
        finally:
            await producer.stop()
        await transport.publish([good])
        kept = CollectedDeadLetters(transport, GROUP)

        async def committed_past_all() -> bool:
            offset = await committed_offset(kafka_cluster, group_id(naming, GROUP), topic)
            return offset == len(odd) + 1

        async with running(transport.consumer(pipeline, ConsumerOptions())):
            await eventually(committed_past_all, within=WAIT, what="offsets move past them")
        letters: dict[str | None, StoredDeadLetter] = {}

        async def collected() -> bool:
            letters.update((letter.key, letter) for letter in await kept.list())
            return bool(letters)

        await eventually(collected, within=WAIT, what="the dead letter is collected")
    # Handled as any record is: the odd headers read with replacements, the body that is
    # not JSON refused by the contract, each ending where it should, none skipped.
    assert sorted(handled) == ["after-the-odd-ones", "not-utf8-header", "null-header"]
    assert list(letters) == ["json-that-is-not"]
    assert letters["json-that-is-not"].error_type == "UndecodableMessage"


async def test_an_idle_consumer_gets_a_new_message_without_waiting_out_its_fetch(
    kafka_cluster: KafkaCluster, unique_name: str
) -> None:
    # The development broker answers a waiting fetch only when its wait ends: at Kafka's
    # default (500 ms) every hop of an order's events waited a quarter of a second.
    naming = Naming(unique_name)
    arrived: dict[str, float] = {}
    router = Router(GROUP)

    @router.subscriber(OrderCreated, transactional=False)
    async def remember(event: OrderCreated, context: MessageContext) -> None:
        arrived[context.envelope.key or ""] = time.monotonic()

    async with started(kafka_settings(kafka_cluster, partitions=2), naming) as transport:
        pipeline = Pipeline(router)
        await transport.declare(pipeline)
        async with running(transport.consumer(pipeline, ConsumerOptions())):
            await transport.publish([order_created(naming, "warm-up")])
            await wait_until(lambda: "warm-up" in arrived, within=WAIT, what="the group joined")
            waits = []
            for n in range(8):
                await asyncio.sleep(0.15)  # idle: the consumer's fetch is waiting
                sent = time.monotonic()
                await transport.publish([order_created(naming, f"order-{n}")])
                await wait_until(lambda n=n: f"order-{n}" in arrived, within=WAIT, what="handled")
                waits.append(arrived[f"order-{n}"] - sent)
    # 10-30 ms here; 90-100 ms when the fetch waited up to 500 ms.
    assert sorted(waits)[len(waits) // 2] < 0.06, f"publish to handler, seconds: {waits}"
