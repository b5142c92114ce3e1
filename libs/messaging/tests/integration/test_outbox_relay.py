"""The outbox and its relay on real Postgres: what is committed is published, once per
healthy relay pair, in per-key order; what is rolled back never is."""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
import sys
import uuid
from collections import defaultdict
from collections.abc import AsyncIterator, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path

import asyncpg
import pytest
from aiokafka import AIOKafkaConsumer, TopicPartition
from sqlalchemy import func, insert, select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from shop.contracts import Envelope, OrderCreated, decode, examples, wrap
from shop.devstack.kafka import KafkaCluster, TansuBroker
from shop.devstack.ports import free_port
from shop.messaging import (
    KafkaSettings,
    Naming,
    OutboxItem,
    PublishError,
    Relay,
    RelaySettings,
    add,
    add_on_connection,
)
from shop.messaging.errors import MessageTooLarge
from shop.messaging.message import OutgoingMessage
from shop.messaging.outbox import outbox_row
from shop.messaging.relay import asyncpg_dsn
from shop.messaging.schema import outbox
from shop.messaging.testing import eventually, wait_until
from shop.messaging.transports.kafka import KafkaTransport
from shop.messaging.transports.memory import MemoryBroker, MemoryTransport

FAST = RelaySettings(poll_interval=0.2, takeover_interval=0.2, stats_interval=0.1)


def order_event(key: str, sequence: int = 0) -> Envelope[OrderCreated]:
    event = examples.examples()[OrderCreated].model_copy(
        update={"order_id": uuid.uuid4(), "customer_id": f"seq-{sequence}"}
    )
    return wrap(event, key=key)


@contextlib.asynccontextmanager
async def relaying(relay: Relay) -> AsyncIterator[asyncio.Task[None]]:
    task = asyncio.create_task(relay.run())
    try:
        yield task
    finally:
        relay.stop()
        await asyncio.wait_for(task, 30)


async def unsent(sessions: async_sessionmaker[AsyncSession]) -> int:
    async with sessions() as session:
        query = select(func.count()).select_from(outbox).where(outbox.c.published_at.is_(None))
        return int((await session.execute(query)).scalar_one())


def published_ids(messages: Sequence[OutgoingMessage]) -> list[uuid.UUID]:
    return [decode(m.body).event_id for m in messages]


async def test_rolled_back_rows_are_never_published_and_committed_ones_are(
    sessions: async_sessionmaker[AsyncSession], database_url: str
) -> None:
    broker = MemoryBroker()
    committed, rolled_back = order_event("order-1"), order_event("order-2")
    async with sessions() as session, session.begin():
        await add(session, committed)

    async def failing_checkout() -> None:
        async with sessions() as session, session.begin():
            await add(session, rolled_back)
            raise RuntimeError("stock reservation failed")

    with pytest.raises(RuntimeError):
        await failing_checkout()

    relay = Relay(database_url, MemoryTransport(broker), settings=FAST)
    async with relaying(relay):
        await wait_until(lambda: len(broker.published) >= 1, what="the committed row")
        await asyncio.sleep(0.5)  # time enough for a wrong second publication to show
    assert published_ids(broker.published) == [committed.event_id]
    assert await unsent(sessions) == 0


async def test_relay_wakes_on_commit_without_waiting_for_its_poll(
    sessions: async_sessionmaker[AsyncSession], database_url: str
) -> None:
    broker = MemoryBroker()
    relay = Relay(database_url, MemoryTransport(broker), settings=RelaySettings(poll_interval=3600))
    async with relaying(relay):
        await wait_until(lambda: relay.is_leader, what="the relay to lead")
        await asyncio.sleep(0.2)  # it is now waiting for a notification
        async with sessions() as session, session.begin():
            await add(session, order_event("order-1"))
        await wait_until(lambda: len(broker.published) == 1, within=10, what="NOTIFY to wake it")


async def test_a_scheduled_message_is_published_once_due_and_not_before(
    sessions: async_sessionmaker[AsyncSession], database_url: str
) -> None:
    broker = MemoryBroker()
    now, later = order_event("order-1"), order_event("order-2")
    connection = await asyncpg.connect(asyncpg_dsn(database_url))
    try:
        async with connection.transaction():
            due_at = datetime.now(UTC) + timedelta(seconds=2)
            # One statement for both, as the checkout writes them.
            await add_on_connection(connection, OutboxItem(later, due_at=due_at), OutboxItem(now))
    finally:
        await connection.close()

    relay = Relay(database_url, MemoryTransport(broker), settings=FAST)
    async with relaying(relay):
        await wait_until(lambda: len(broker.published) >= 1, what="the message due now")
        assert published_ids(broker.published) == [now.event_id]

        async def only_the_scheduled_one_waits() -> bool:
            return await unsent(sessions) == 1

        await eventually(only_the_scheduled_one_waits, what="the first to be marked sent")
        assert published_ids(broker.published) == [now.event_id]
        await wait_until(lambda: len(broker.published) >= 2, what="the scheduled message")
        published_when = datetime.now(UTC)
    assert published_ids(broker.published) == [now.event_id, later.event_id]
    assert published_when >= due_at
    assert await unsent(sessions) == 0


class StoppedWhilePublishing(MemoryTransport):
    """Publishes, then asks its relay to stop: the stop lands while the batch is in flight."""

    relay: Relay

    async def publish(self, messages: Sequence[OutgoingMessage]) -> None:
        await super().publish(messages)
        self.relay.stop()


async def test_a_stop_marks_the_batch_already_published_instead_of_publishing_it_again(
    sessions: async_sessionmaker[AsyncSession], database_url: str
) -> None:
    # A deploy stops the relay between a publication and its mark; abandoned, the batch
    # would go out a second time from the next leader, a duplicate on every deploy.
    broker = MemoryBroker()
    transport = StoppedWhilePublishing(broker)
    relay = transport.relay = Relay(database_url, transport, settings=FAST)
    await write_rows(sessions, keys=1, per_key=3)
    async with relaying(relay) as running:
        await asyncio.wait_for(running, 30)
    assert len(broker.published) == 3
    assert await unsent(sessions) == 0


class StoppedAfterAWhile(StoppedWhilePublishing):
    """Takes a moment to publish (the relay claims the next rows meanwhile), then asks its
    relay to stop."""

    async def publish(self, messages: Sequence[OutgoingMessage]) -> None:
        await asyncio.sleep(0.3)
        await super().publish(messages)


async def test_a_stop_hands_over_no_further_batch_once_the_one_on_its_way_is_settled(
    sessions: async_sessionmaker[AsyncSession], database_url: str
) -> None:
    # The rows claimed behind the batch on its way (the same key) wait for it; a stop
    # while they wait settles that batch and leaves them for the next leader, instead of
    # starting one more publication that the stop would then have to wait for.
    broker = MemoryBroker()
    transport = StoppedAfterAWhile(broker)
    settings = FAST.model_copy(update={"batch_size": 2})
    relay = transport.relay = Relay(database_url, transport, settings=settings)
    await write_rows(sessions, keys=1, per_key=6)
    async with relaying(relay) as running:
        await asyncio.wait_for(running, 30)
    assert len(broker.published) == 2
    assert await unsent(sessions) == 4


class NeverAcknowledges(MemoryTransport):
    """Takes a batch and never says whether it went (a broker that stopped answering)."""

    async def publish(self, messages: Sequence[OutgoingMessage]) -> None:
        await asyncio.Event().wait()


async def test_a_stop_waits_for_the_batch_in_flight_only_so_long_then_leaves_it_unsent(
    sessions: async_sessionmaker[AsyncSession], database_url: str
) -> None:
    # A stop must end within the worker's grace period, and its lock go to a standby.
    relay = Relay(
        database_url,
        NeverAcknowledges(MemoryBroker()),
        settings=FAST.model_copy(update={"stop_timeout": 0.5}),
    )
    await write_rows(sessions, keys=1, per_key=2)
    task = asyncio.create_task(relay.run())
    try:
        await wait_until(lambda: relay.is_leader, what="the relay to lead")
        await asyncio.sleep(0.2)  # the batch is on its way, and stays there
    finally:
        relay.stop()
        started = asyncio.get_running_loop().time()
        await asyncio.wait_for(task, 10)
    assert asyncio.get_running_loop().time() - started < 2
    assert await unsent(sessions) == 2


async def test_a_mass_of_scheduled_messages_does_not_hold_up_the_ones_due_now(
    sessions: async_sessionmaker[AsyncSession], database_url: str
) -> None:
    broker = MemoryBroker()
    async with sessions() as session, session.begin():
        for sequence in range(2000):
            await add(
                session,
                order_event(f"later-{sequence}"),
                due_at=datetime.now(UTC) + timedelta(hours=1),
            )
        await add(session, urgent := order_event("now"))

    relay = Relay(database_url, MemoryTransport(broker), settings=FAST)
    async with relaying(relay):
        await wait_until(lambda: len(broker.published) >= 1, what="the message due now")
        await asyncio.sleep(0.3)
    assert published_ids(broker.published) == [urgent.event_id]


async def write_rows(
    sessions: async_sessionmaker[AsyncSession], keys: int, per_key: int
) -> dict[str, list[uuid.UUID]]:
    """Rows for ``keys`` orders, interleaved, each key's events in order; returns them."""
    expected: dict[str, list[uuid.UUID]] = defaultdict(list)
    rows = []
    for sequence in range(per_key):
        for k in range(keys):
            envelope = order_event(f"order-{k}", sequence)
            expected[envelope.key].append(envelope.event_id)
            rows.append(outbox_row(envelope))
    async with sessions() as session, session.begin():
        for start in range(0, len(rows), 1000):
            await session.execute(insert(outbox), rows[start : start + 1000])
    return expected


def by_key(messages: Sequence[OutgoingMessage]) -> dict[str, list[uuid.UUID]]:
    received: dict[str, list[uuid.UUID]] = defaultdict(list)
    for message in messages:
        received[message.key].append(decode(message.body).event_id)
    return received


class RefusesOnce(MemoryTransport):
    """Hands its batch over in order like the others, but refuses one message the first
    time, and says so a moment later (so that the relay has the next batch on its way)."""

    def __init__(self, broker: MemoryBroker, refused: uuid.UUID) -> None:
        super().__init__(broker)
        self.refused: uuid.UUID | None = refused

    async def publish(self, messages: Sequence[OutgoingMessage]) -> None:
        ids = [decode(message.body).event_id for message in messages]
        if self.refused not in ids:
            await super().publish(messages)
            return
        failed = ids.index(self.refused)
        self.refused = None
        await super().publish([m for i, m in enumerate(messages) if i != failed])
        await asyncio.sleep(0.3)  # as a broker's refusal comes with its acknowledgements
        raise PublishError({failed}, MessageTooLarge("refused once"))


def first_publications(messages: Sequence[OutgoingMessage]) -> dict[str, list[uuid.UUID]]:
    """Each key's events in the order each was first published (duplicates dropped, as
    the consumers' inbox drops them)."""
    return {key: list(dict.fromkeys(ids)) for key, ids in by_key(messages).items()}


async def test_a_refused_message_keeps_its_keys_later_ones_back_in_the_batch_after_it(
    sessions: async_sessionmaker[AsyncSession], database_url: str
) -> None:
    # Batches of two, one on its way while the next is read: the first order's first
    # event is refused once, and its second event, in the next batch, must not go first.
    expected = await write_rows(sessions, keys=2, per_key=3)
    broker = MemoryBroker()
    transport = RefusesOnce(broker, refused=expected["order-0"][0])
    settings = FAST.model_copy(update={"batch_size": 2, "backoff_initial": 0.1})
    async with relaying(Relay(database_url, transport, settings=settings)):

        async def all_sent() -> bool:
            return await unsent(sessions) == 0

        await eventually(all_sent, what="every row published")
    assert first_publications(broker.published) == expected


class SlowAcks(MemoryTransport):
    """Hands a batch over at once and acknowledges it a moment later, as a broker does: the
    relay always has the next batch on its way meanwhile."""

    async def publish(self, messages: Sequence[OutgoingMessage]) -> None:
        await super().publish(messages)
        await asyncio.sleep(0.05)


async def test_a_row_held_back_behind_its_keys_batch_goes_in_the_next_while_traffic_flows(
    sessions: async_sessionmaker[AsyncSession], database_url: str
) -> None:
    # order-0's second row is claimed while its first is on its way, and left out; it must
    # go in the next batch, not wait for a lull in the rows still arriving.
    broker = MemoryBroker()
    first, second = order_event("order-0", 0), order_event("order-0", 1)
    async with sessions() as session, session.begin():
        await add(session, first)
        await add(session, order_event("a"))
        await add(session, order_event("b"))
        await add(session, second)
        for n in range(10):
            await add(session, order_event(f"waiting-{n}"))
    settings = FAST.model_copy(update={"batch_size": 3})

    async def traffic() -> None:
        for n in range(200):  # a new order every 10 ms, for 2 s
            async with sessions() as session, session.begin():
                await add(session, order_event(f"new-{n}"))
            await asyncio.sleep(0.01)

    writing = asyncio.create_task(traffic())
    async with relaying(Relay(database_url, SlowAcks(broker), settings=settings)):
        try:
            await wait_until(
                lambda: second.event_id in published_ids(broker.published),
                within=10,
                what="order-0's second row",
            )
        finally:
            await writing
    published = published_ids(broker.published)
    # Its first batch (three rows), then the batch after: not behind every row that came.
    assert published.index(second.event_id) < 6, published.index(second.event_id)
    assert first_publications(broker.published)["order-0"] == [first.event_id, second.event_id]


async def test_two_relays_publish_every_row_exactly_once_in_key_order(
    sessions: async_sessionmaker[AsyncSession], database_url: str
) -> None:
    expected = await write_rows(sessions, keys=100, per_key=100)
    broker = MemoryBroker()
    first = Relay(database_url, MemoryTransport(broker), settings=FAST)
    second = Relay(database_url, MemoryTransport(broker), settings=FAST)
    async with relaying(first), relaying(second):
        await wait_until(lambda: len(broker.published) >= 10_000, within=120, what="10,000")
        await asyncio.sleep(0.5)
    assert len(broker.published) == 10_000
    assert by_key(broker.published) == expected
    assert await unsent(sessions) == 0


async def test_a_standby_relay_takes_over_when_the_leader_dies(
    sessions: async_sessionmaker[AsyncSession], database_url: str
) -> None:
    broker = MemoryBroker()
    leader = Relay(database_url, MemoryTransport(broker), settings=FAST)
    standby = Relay(database_url, MemoryTransport(broker), settings=FAST)
    async with relaying(leader):
        await wait_until(lambda: leader.is_leader, what="a leader")
        async with relaying(standby):
            await asyncio.sleep(0.5)
            assert not standby.is_leader
            leader.stop()  # the leader goes away; its lock goes with its connection
            await wait_until(lambda: not leader.connected, what="the leader to go")
            await wait_until(lambda: standby.is_leader, within=10, what="the takeover")
            expected = await write_rows(sessions, keys=3, per_key=5)
            await wait_until(lambda: len(broker.published) == 15, what="the standby publishing")
    assert by_key(broker.published) == expected


async def test_a_leader_whose_connection_is_cut_loses_the_lead_to_the_standby(
    sessions: async_sessionmaker[AsyncSession], database_url: str
) -> None:
    broker = MemoryBroker()
    first = Relay(database_url, MemoryTransport(broker), settings=FAST)
    second = Relay(database_url, MemoryTransport(broker), settings=FAST)
    async with relaying(first), relaying(second):
        await wait_until(lambda: first.is_leader or second.is_leader, what="a leader")
        leader, standby = (first, second) if first.is_leader else (second, first)
        admin = await asyncpg.connect(asyncpg_dsn(database_url))
        try:  # as if the leader's host vanished: the server ends its session
            await admin.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_locks"
                " WHERE locktype = 'advisory' AND granted AND objid = $1::bigint::oid",
                leader.lock_key,
            )
        finally:
            await admin.close()
        await wait_until(lambda: standby.is_leader, within=10, what="the standby to lead")
        expected = await write_rows(sessions, keys=2, per_key=3)
        await wait_until(lambda: len(broker.published) == 6, what="publishing after takeover")
    assert by_key(broker.published) == expected


async def rows_left(sessions: async_sessionmaker[AsyncSession]) -> int:
    async with sessions() as session:
        return int((await session.execute(select(func.count()).select_from(outbox))).scalar_one())


@pytest.mark.parametrize(("retention", "kept"), [(0.0, 0), (3600.0, 4)])
async def test_sent_rows_are_deleted_once_past_their_retention(
    sessions: async_sessionmaker[AsyncSession], database_url: str, retention: float, kept: int
) -> None:
    broker = MemoryBroker()
    settings = FAST.model_copy(update={"retention_seconds": retention, "cleanup_interval": 0.1})
    relay = Relay(database_url, MemoryTransport(broker), settings=settings)
    async with relaying(relay):
        await write_rows(sessions, keys=2, per_key=2)
        await wait_until(lambda: len(broker.published) == 4, what="publishing")
        await asyncio.sleep(0.5)  # several cleanup rounds
    assert await unsent(sessions) == 0
    assert await rows_left(sessions) == kept


_SEED = """
    INSERT INTO outbox
        (event_id, key, message_type, headers, body, created_at, published_at, due_at)
    SELECT gen_random_uuid(), 'order-' || i % 100, $1, $2::jsonb, $3,
           now() - interval '2 hours', now() - make_interval(secs => $5), $6
    FROM generate_series(1, $4) AS i
"""


async def seed(
    database_url: str, count: int, *, sent_ago: float | None, due_at: datetime | None = None
) -> None:
    """``count`` rows written two hours ago: sent ``sent_ago`` s ago, or unsent (None)."""
    row = outbox_row(order_event("seeded"))
    connection = await asyncpg.connect(asyncpg_dsn(database_url))
    try:
        await connection.execute(
            _SEED,
            row["message_type"],
            json.dumps(row["headers"]),
            row["body"],
            count,
            sent_ago,
            due_at,
        )
    finally:
        await connection.close()


def sample(relay: Relay, name: str) -> float:
    return relay.metrics.registry.get_sample_value(name) or 0.0


async def test_one_cleanup_round_deletes_every_row_past_retention_while_the_relay_publishes(
    sessions: async_sessionmaker[AsyncSession], database_url: str
) -> None:
    past_retention = 50_000  # five times what the cleanup once deleted in a round
    await seed(database_url, past_retention, sent_ago=3600)
    await seed(database_url, 1000, sent_ago=10)  # inside the retention
    await seed(database_url, 1000, sent_ago=None, due_at=datetime.now(UTC) + timedelta(hours=1))
    broker = MemoryBroker()
    settings = FAST.model_copy(update={"retention_seconds": 60, "cleanup_interval": 3600})
    relay = Relay(database_url, MemoryTransport(broker), settings=settings)
    published_while_cleaning: list[float] = []

    async def checkouts() -> None:
        for sequence in range(200):
            async with sessions() as session, session.begin():
                await add(session, order_event(f"new-{sequence % 10}", sequence))
            deleted = sample(relay, "messaging_relay_cleanup_deleted_total")
            if 0 < deleted < past_retention:
                published_while_cleaning.append(sample(relay, "messaging_relay_published_total"))
            await asyncio.sleep(0.01)

    async with relaying(relay):
        await checkouts()
        await wait_until(lambda: len(broker.published) == 200, what="the new rows published")
        await wait_until(
            lambda: sample(relay, "messaging_relay_cleanup_deleted_total") >= past_retention,
            what="the old rows deleted",
        )
    # The relay kept publishing while the round ran (its cleanup interval is an hour, so
    # this was one round).
    assert len(published_while_cleaning) >= 2
    assert published_while_cleaning[-1] > published_while_cleaning[0]
    assert sample(relay, "messaging_relay_cleanup_deleted_total") == past_retention
    async with sessions() as session:
        query = select(outbox.c.published_at.is_(None), func.count()).group_by(
            outbox.c.published_at.is_(None)
        )
        left = dict((await session.execute(query)).all())
    assert left == {False: 1000 + 200, True: 1000}  # sent in the retention, new; scheduled


# -- against a real Kafka-protocol broker ---------------------------------------------

SCRIPT = Path(__file__).with_name("relay_process.py")


async def kafka_transport(bootstrap: str, namespace: str) -> KafkaTransport:
    transport = KafkaTransport(
        KafkaSettings(bootstrap_servers=bootstrap, partitions=3, request_timeout_ms=5000),
        Naming(namespace),
    )
    await transport.start()
    return transport


async def received(bootstrap: str, namespace: str, expected: int) -> dict[str, list[uuid.UUID]]:
    """Every message on the OrderCreated topic, per key in offset order (one partition per
    key, so offset order is the order a consumer sees), read until ``expected`` distinct
    events were seen: with duplicates there are more records than events, and stopping at
    a count of records left some partitions' last events unread."""
    topic = Naming(namespace).topic(OrderCreated)
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
    await consumer.start()
    try:
        partitions = [TopicPartition(topic, p) for p in consumer.partitions_for_topic(topic) or ()]
        consumer.assign(partitions)
        await consumer.seek_to_beginning(*partitions)
        by_key: dict[str, list[uuid.UUID]] = defaultdict(list)
        seen: set[uuid.UUID] = set()
        async with asyncio.timeout(120):
            while len(seen) < expected:
                for records in (await consumer.getmany(timeout_ms=500)).values():
                    for record in records:
                        event_id = decode(record.value).event_id
                        by_key[record.key.decode()].append(event_id)
                        seen.add(event_id)
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
    other = await kafka_transport(kafka_cluster.bootstrap_servers, unique_name)
    try:
        first = Relay(database_url, transport, settings=FAST)
        second = Relay(database_url, other, settings=FAST)
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

    successor = Relay(database_url, transport, settings=FAST)
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
    relay = Relay(database_url, transport, settings=FAST)
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
