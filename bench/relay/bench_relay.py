"""Outbox → Kafka: one relay's throughput on the Kafka transport (FastStream's broker
underneath) next to raw aiokafka producing the same messages and next to the relay on the
previous transport (its own aiokafka producer, ``previous_transport.py``); then, at a
steady offered rate, commit → publish (the broker acknowledged it) and commit → consumer
latencies. Run: ``make bench-relay``.

Every throughput figure comes from the same run, on the same broker, with the same
producer settings (acks=all, linger 5 ms), the same bodies, keys and headers; the three
are measured in turns, several rounds, and each round is printed beside the medians.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import statistics
import tempfile
import time
import uuid
from collections.abc import AsyncIterator, Iterator, Sequence
from pathlib import Path

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer

# Run as a script, so its folder is on the path.
from previous_transport import PreviousKafkaPublisher
from sqlalchemy import func, insert, select, text
from sqlalchemy.ext.asyncio import AsyncEngine, async_sessionmaker, create_async_engine

from shop.contracts import OrderCreated, examples, wrap
from shop.devstack.parts import Part, kafka_part, postgres_part
from shop.devstack.settings import DevstackSettings
from shop.messaging import KafkaSettings, Naming, Relay, RelaySettings, add
from shop.messaging.message import OutgoingMessage
from shop.messaging.outbox import outbox_row
from shop.messaging.schema import OUTBOX_CHANNEL, create_tables, outbox
from shop.messaging.testing import wait_until
from shop.messaging.transports.base import Transport
from shop.messaging.transports.kafka import KafkaTransport

PARTITIONS = 6
LINGER_MS = 5


def kafka_settings(bootstrap: str) -> KafkaSettings:
    return KafkaSettings(bootstrap_servers=bootstrap, partitions=PARTITIONS, linger_ms=LINGER_MS)


@contextlib.contextmanager
def infrastructure(workdir: Path) -> Iterator[tuple[str, str]]:
    """Postgres and a Kafka-protocol broker (embedded, or the ones SHOP_DEVSTACK_* name)."""
    settings = DevstackSettings()
    postgres, server = postgres_part(settings, workdir)
    kafka, cluster = kafka_part(settings, workdir)
    parts: list[Part] = [postgres, kafka]
    try:
        for part in parts:
            part.spawn()
        for part in parts:
            part.wait_ready()
        database = asyncio.run(server.create_database(prefix="bench"))
        yield server.url(database, driver="postgresql+asyncpg"), cluster.bootstrap_servers
    finally:
        for part in reversed(parts):
            part.stop()


def rows(count: int, orders: int) -> list[dict[str, object]]:
    """``count`` OrderCreated outbox rows over ``orders`` orders (keys), in turn."""
    event = examples.examples()[OrderCreated]
    return [outbox_row(wrap(event, key=f"order-{i % orders}")) for i in range(count)]


@contextlib.asynccontextmanager
async def kafka_transport(bootstrap: str, namespace: str) -> AsyncIterator[KafkaTransport]:
    transport = KafkaTransport(kafka_settings(bootstrap), Naming(namespace))
    await transport.start()  # creates the topics
    try:
        yield transport
    finally:
        await transport.close()


@contextlib.asynccontextmanager
async def previous_kafka_transport(bootstrap: str, namespace: str) -> AsyncIterator[Transport]:
    async with kafka_transport(bootstrap, namespace):  # the topics, created alike
        publisher = PreviousKafkaPublisher(kafka_settings(bootstrap), Naming(namespace))
        await publisher.start()
        try:
            yield publisher  # type: ignore[misc]  # the relay needs naming and publish only
        finally:
            await publisher.close()


class PublishClock:
    """A transport that notes when the broker acknowledged each message (by event id)."""

    def __init__(self, inner: Transport) -> None:
        self.inner = inner
        self.name = inner.name
        self.naming = inner.naming
        self.published: dict[str, float] = {}

    async def publish(self, messages: Sequence[OutgoingMessage]) -> None:
        await self.inner.publish(messages)
        now = time.perf_counter()
        for message in messages:
            self.published[message.headers["x-event-id"]] = now


async def raw_aiokafka(bootstrap: str, batch: list[dict[str, object]], namespace: str) -> float:
    """Events/s of a bare aiokafka producer sending the relay's messages."""
    async with kafka_transport(bootstrap, namespace):
        topic = Naming(namespace).topic(OrderCreated)
        producer = AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all", linger_ms=LINGER_MS)
        await producer.start()
        try:
            started = time.perf_counter()
            sends = [
                await producer.send(
                    topic,
                    value=row["body"],
                    key=str(row["key"]).encode(),
                    headers=[(k, v.encode()) for k, v in row["headers"].items()],  # type: ignore[attr-defined]
                )
                for row in batch
            ]
            await asyncio.gather(*sends)
            return len(batch) / (time.perf_counter() - started)
        finally:
            await producer.stop()


async def relay_throughput(
    engine: AsyncEngine,
    url: str,
    transports: contextlib.AbstractAsyncContextManager[Transport],
    batch: list[dict[str, object]],
) -> float:
    """Events/s of one relay draining ``batch`` committed rows to Kafka."""
    async with engine.begin() as connection:
        # Each arm starts on an empty table: the rows an earlier arm marked sent (and their
        # dead versions) would slow the claims of the arms measured after it.
        await connection.execute(text("TRUNCATE outbox"))
    async with transports as transport:
        relay = Relay(url, transport, settings=RelaySettings())
        task = asyncio.create_task(relay.run())
        await wait_until(lambda: relay.is_leader, what="the relay to lead")
        async with engine.begin() as connection:
            for start in range(0, len(batch), 5000):
                await connection.execute(insert(outbox), batch[start : start + 5000])
            await connection.execute(select(func.pg_notify(OUTBOX_CHANNEL, "")))
        started = time.perf_counter()  # the commit: the relay wakes on its NOTIFY
        await wait_until(
            lambda: published(relay) >= len(batch), within=600, what="the relay to drain"
        )
        elapsed = time.perf_counter() - started
        relay.stop()
        await task
        return len(batch) / elapsed


async def steady_latency(
    engine: AsyncEngine, url: str, bootstrap: str, rate: int, seconds: float
) -> tuple[list[float], list[float]]:
    """Commit → published (acknowledged by the broker) and commit → received-by-a-consumer
    latencies (ms) of events written at ``rate``/s, one transaction each."""
    naming = Naming("latency")
    committed: dict[str, float] = {}
    latencies: list[float] = []
    async with kafka_transport(bootstrap, "latency") as kafka:
        transport = PublishClock(kafka)
        consumer = AIOKafkaConsumer(
            naming.topic(OrderCreated),
            bootstrap_servers=bootstrap,
            group_id=f"bench-{uuid.uuid4().hex[:8]}",
            auto_offset_reset="earliest",
            fetch_max_wait_ms=5,
            session_timeout_ms=6000,
        )
        await consumer.start()
        relay = Relay(url, transport, settings=RelaySettings())  # type: ignore[arg-type]
        relay_task = asyncio.create_task(relay.run())
        sessions = async_sessionmaker(engine)
        total = int(rate * seconds)

        async def consume() -> None:
            while len(latencies) < total:
                for records in (await consumer.getmany(timeout_ms=100)).values():
                    now = time.perf_counter()
                    for record in records:
                        event_id = dict(record.headers)["x-event-id"].decode()
                        latencies.append((now - committed[event_id]) * 1000)

        consuming = asyncio.create_task(consume())
        await asyncio.sleep(6)  # the consumer group forms before the clock starts
        event = examples.examples()[OrderCreated]
        started = time.perf_counter()
        for i in range(total):
            await asyncio.sleep(max(0.0, started + i / rate - time.perf_counter()))
            envelope = wrap(event, key=f"order-{i % 1000}")
            async with sessions() as session, session.begin():
                await add(session, envelope)
            committed[str(envelope.event_id)] = time.perf_counter()
        await asyncio.wait_for(consuming, 60)
        relay.stop()
        await relay_task
        await consumer.stop()
    publishing = [(transport.published[e] - at) * 1000 for e, at in committed.items()]
    return publishing, latencies


def published(relay: Relay) -> float:
    return relay.metrics.registry.get_sample_value("messaging_relay_published_total") or 0.0


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


async def throughput(
    engine: AsyncEngine, url: str, bootstrap: str, *, events: int, rounds: int, orders: int
) -> None:
    """The three side by side, on rows over ``orders`` keys: as many keys as a relay batch
    holds (1,000) puts each key in every batch, so a batch never goes out while the one
    before it is on its way (the relay keeps each key's order); one event per order
    (``orders`` = ``events``) is a run of checkouts, whose batches overlap."""
    figures: dict[str, list[float]] = {"raw": [], "previous": [], "faststream": []}
    print(
        f"throughput, {events} events over {orders} keys a round, {PARTITIONS} partitions, "
        f"{rounds} rounds"
    )
    for n in range(rounds):
        name = f"{orders}k{n}"
        raw = await raw_aiokafka(bootstrap, rows(events, orders), f"raw{name}")
        previous = await relay_throughput(
            engine,
            url,
            previous_kafka_transport(bootstrap, f"previous{name}"),
            rows(events, orders),
        )
        current = await relay_throughput(
            engine, url, kafka_transport(bootstrap, f"faststream{name}"), rows(events, orders)
        )
        for label, value in (("raw", raw), ("previous", previous), ("faststream", current)):
            figures[label].append(value)
        print(
            f"  round {n + 1}: raw {raw:8,.0f}   previous relay {previous:8,.0f}   "
            f"relay on FastStream {current:8,.0f} events/s"
        )
    raw, previous, current = (statistics.median(figures[k]) for k in figures)
    print(f"medians, {orders} keys")
    print(f"  raw aiokafka producer           : {raw:10,.0f} events/s")
    print(f"  relay, previous transport       : {previous:10,.0f} events/s")
    print(f"  relay, transport on FastStream  : {current:10,.0f} events/s")
    print(f"  ratio FastStream relay/raw      : {current / raw:10.2f}")
    print(f"  ratio FastStream/previous relay : {current / previous:10.2f}   (goal >= 0.95)")


async def measure(
    url: str,
    bootstrap: str,
    *,
    events: int,
    rounds: int,
    rate: int,
    seconds: float,
    orders: Sequence[int],
) -> None:
    engine = create_async_engine(url, pool_size=4)
    async with engine.begin() as connection:
        await create_tables(connection)
    for spread in orders:
        await throughput(engine, url, bootstrap, events=events, rounds=rounds, orders=spread)
    publishing, consuming = await steady_latency(engine, url, bootstrap, rate, seconds)
    print(f"latency at {rate} events/s offered for {seconds:.0f} s, {len(consuming)} events")
    for label, values in (
        ("commit -> published", publishing),
        ("commit -> consumer ", consuming),
    ):
        p50, p99 = percentile(values, 0.50), percentile(values, 0.99)
        print(f"  {label}  p50 {p50:7.1f} ms   p99 {p99:7.1f} ms   max {max(values):7.1f} ms")
    print("  goal: commit -> published p99 <= 50 ms")
    await engine.dispose()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--events", type=int, default=30_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--rate", type=int, default=500)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument(
        "--orders",
        type=lambda value: [int(n) for n in value.split(",")],
        default=[1000, 30_000],
        help="keys the events spread over, one throughput table each (comma-separated)",
    )
    args = parser.parse_args()
    with (
        tempfile.TemporaryDirectory(prefix="bench-relay-") as workdir,
        infrastructure(Path(workdir)) as (url, bootstrap),
    ):
        asyncio.run(
            measure(
                url,
                bootstrap,
                events=args.events,
                rounds=args.rounds,
                rate=args.rate,
                seconds=args.seconds,
                orders=args.orders,
            )
        )


if __name__ == "__main__":
    main()
