"""The consumers ``bench_consume.py`` measures, one per process: each handles ``--count``
messages, then prints one JSON line: its CPU seconds (every thread) and wall seconds from
its first handled message to its last, and how many it handled.

``faststream`` is Kafka only: FastStream has no SQS transport (the shop's SQS consumer is
its own, on aiobotocore).

Every side does the same SQL per message, in one transaction: the inbox row (the
consumer, the event id, its type; a message seen before is skipped) and the handler's row.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import asyncpg

IN_FLIGHT = 16
POOL = 4
COMMIT_INTERVAL = 0.5
"""Seconds between Kafka offset commits, as the shop's consumer commits."""

INBOX = """
INSERT INTO inbox (consumer, event_id, message_type) VALUES ($1, $2, $3)
ON CONFLICT DO NOTHING RETURNING event_id"""
CONSUMED = "INSERT INTO consumed (consumer, event_id, order_number) VALUES ($1, $2, $3)"


class Clock:
    """CPU and wall time from the first handled message to the ``count``-th."""

    def __init__(self, count: int) -> None:
        self.count = count
        self.handled = 0
        self.done = asyncio.Event()
        self.cpu = self.wall = 0.0

    def tick(self) -> None:
        self.handled += 1
        if self.handled == 1:
            self.cpu, self.wall = time.process_time(), time.perf_counter()
        elif self.handled == self.count:
            self.cpu, self.wall = time.process_time() - self.cpu, time.perf_counter() - self.wall
            self.done.set()

    def figures(self) -> dict[str, float]:
        return {"cpu": self.cpu, "wall": self.wall, "handled": self.handled}


# --- bare: the broker's own client and asyncpg ---------------------------------------------


async def record_bare(pool: asyncpg.Pool, consumer: str, body: bytes | str) -> None:
    envelope = json.loads(body)
    event_id = uuid.UUID(envelope["event_id"])
    async with pool.acquire() as connection, connection.transaction():
        if await connection.fetchval(INBOX, consumer, event_id, envelope["type"]) is not None:
            await connection.execute(
                CONSUMED, consumer, event_id, envelope["payload"]["order_number"]
            )


async def bare_kafka(args: argparse.Namespace, clock: Clock) -> None:
    from aiokafka import AIOKafkaConsumer, TopicPartition  # noqa: PLC0415

    from shop.contracts import OrderCreated  # noqa: PLC0415
    from shop.messaging import Naming  # noqa: PLC0415

    settings = args.messaging
    topic = Naming(settings["namespace"]).topic(OrderCreated)
    pool = await asyncpg.create_pool(args.database_url, min_size=POOL, max_size=POOL)
    consumer = AIOKafkaConsumer(
        topic,
        bootstrap_servers=settings["kafka"]["bootstrap_servers"],
        group_id=args.group,
        enable_auto_commit=False,
        auto_offset_reset="earliest",
    )
    await consumer.start()
    slots = asyncio.Semaphore(IN_FLIGHT)
    done: dict[TopicPartition, int] = {}
    last_commit = time.monotonic()

    async def handle(body: bytes) -> None:
        async with slots:
            await record_bare(pool, args.group, body)
        clock.tick()

    try:
        while not clock.done.is_set():
            batches = await consumer.getmany(timeout_ms=200, max_records=IN_FLIGHT * 4)
            # Records of one partition in order of their offsets; each has its own key here,
            # so all of a fetch may run at once, IN_FLIGHT at a time.
            fetched = [record for records in batches.values() for record in records]
            await asyncio.gather(*(handle(record.value) for record in fetched))
            for partition, records in batches.items():
                done[partition] = records[-1].offset + 1
            if time.monotonic() - last_commit >= COMMIT_INTERVAL or clock.done.is_set():
                if done:
                    await consumer.commit(dict(done))
                last_commit = time.monotonic()
    finally:
        await consumer.stop()
        await pool.close()


async def bare_sqs(args: argparse.Namespace, clock: Clock) -> None:
    from aiobotocore.session import get_session  # noqa: PLC0415

    from shop.messaging import Naming  # noqa: PLC0415

    settings = args.messaging["sqs"]
    queue_name = Naming(args.messaging["namespace"]).queue(args.group)
    pool = await asyncpg.create_pool(args.database_url, min_size=POOL, max_size=POOL)
    session = get_session()
    async with session.create_client(
        "sqs",
        endpoint_url=settings["endpoint_url"],
        region_name=settings["region"],
        aws_access_key_id=settings["access_key_id"],
        aws_secret_access_key=settings["secret_access_key"],
    ) as sqs:
        queue_url = (await sqs.get_queue_url(QueueName=queue_name))["QueueUrl"]
        slots = asyncio.Semaphore(IN_FLIGHT)

        async def handle(message: dict[str, Any]) -> None:
            async with slots:
                await record_bare(pool, args.group, message["Body"])
            clock.tick()

        async def receive_loop() -> None:
            while not clock.done.is_set():
                answer = await sqs.receive_message(
                    QueueUrl=queue_url,
                    MaxNumberOfMessages=10,
                    WaitTimeSeconds=1,
                    MessageAttributeNames=["All"],
                    AttributeNames=["ApproximateReceiveCount"],
                )
                messages = answer.get("Messages", [])
                if not messages:
                    continue
                await asyncio.gather(*(handle(message) for message in messages))
                await sqs.delete_message_batch(
                    QueueUrl=queue_url,
                    Entries=[
                        {"Id": str(n), "ReceiptHandle": m["ReceiptHandle"]}
                        for n, m in enumerate(messages)
                    ],
                )

        # Two receive loops, as the shop's consumer runs (SqsSettings.receive_concurrency).
        await asyncio.gather(receive_loop(), receive_loop())
    await pool.close()


# --- faststream: the framework the shop's Kafka transport runs on, configured as it does ---


class _Offsets:
    """Where a commit of one partition may go: the oldest message in flight, or just past
    the last one handed out when none is (handlers finish out of order)."""

    def __init__(self) -> None:
        self.in_flight: set[int] = set()
        self.next_offset = 0
        self.committed: int | None = None

    def uncommitted(self) -> int | None:
        offset = min(self.in_flight) if self.in_flight else self.next_offset
        return None if offset in {0, self.committed} else offset


def _faststream_subscriber(args: argparse.Namespace) -> tuple[Any, Any]:
    """A FastStream broker and its subscriber to OrderCreated, as the shop's transport
    configures one: no dependency injection, its access log at DEBUG, the transport's own
    parser and decoder (the record as it came), offsets never committed by acknowledging."""
    import logging  # noqa: PLC0415

    from faststream import AckPolicy  # noqa: PLC0415
    from faststream.kafka import KafkaBroker  # noqa: PLC0415

    from shop.contracts import OrderCreated  # noqa: PLC0415
    from shop.messaging import Naming  # noqa: PLC0415
    from shop.messaging.transports.kafka.underneath import (  # noqa: PLC0415
        record_as_it_came,
        record_itself,
    )

    settings = args.messaging
    topic = Naming(settings["namespace"]).topic(OrderCreated)
    broker = KafkaBroker(
        settings["kafka"]["bootstrap_servers"], apply_types=False, log_level=logging.DEBUG
    )
    subscriber = broker.subscriber(
        topic,
        group_id=args.group,
        ack_policy=AckPolicy.MANUAL,
        auto_offset_reset="earliest",
        parser=record_as_it_came,
        decoder=record_itself,
    )
    return broker, subscriber


async def faststream_kafka(args: argparse.Namespace, clock: Clock) -> None:
    """A FastStream subscriber as the shop's transport configures one
    (:func:`_faststream_subscriber`): FastStream hands the records over one at a time, each
    to a task of its own, IN_FLIGHT at a time; offsets committed every 0.5 s."""
    from aiokafka import TopicPartition  # noqa: PLC0415

    pool = await asyncpg.create_pool(args.database_url, min_size=POOL, max_size=POOL)
    broker, subscriber = _faststream_subscriber(args)
    slots = asyncio.Semaphore(IN_FLIGHT)
    offsets: dict[TopicPartition, _Offsets] = {}
    tasks: set[asyncio.Task[None]] = set()

    failures: list[Exception] = []
    """A message that could not be recorded stops the run (as the bare side's gather does)."""

    async def handle(body: bytes, progress: _Offsets, offset: int) -> None:
        try:
            await record_bare(pool, args.group, body)
        except Exception as error:
            failures.append(error)
            return
        finally:
            slots.release()
        progress.in_flight.discard(offset)
        clock.tick()

    @subscriber
    async def take(record: Any) -> None:
        await slots.acquire()
        tp = TopicPartition(record.topic, record.partition)
        progress = offsets.get(tp) or offsets.setdefault(tp, _Offsets())
        progress.in_flight.add(record.offset)
        progress.next_offset = max(progress.next_offset, record.offset + 1)
        task = asyncio.create_task(handle(record.value, progress, record.offset))
        tasks.add(task)
        task.add_done_callback(tasks.discard)

    async def commit() -> None:
        ready = {tp: o for tp, p in offsets.items() if (o := p.uncommitted()) is not None}
        if ready and subscriber.consumer is not None:
            await subscriber.consumer.commit(ready)
            for tp, offset in ready.items():
                offsets[tp].committed = offset

    await broker.start()
    try:
        while not clock.done.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(clock.done.wait(), COMMIT_INTERVAL)
            if failures:
                raise failures[0]
            await commit()
    finally:
        await broker.stop()
        await pool.close()


# --- the shop's worker ----------------------------------------------------------------------


async def library(args: argparse.Namespace, clock: Clock, *, spans: bool) -> None:
    from sqlalchemy import text  # noqa: PLC0415

    from shop.contracts import OrderCreated  # noqa: PLC0415
    from shop.database.engine import create_engine, session_factory  # noqa: PLC0415
    from shop.messaging import MessageContext, MessagingSettings, Router, Worker  # noqa: PLC0415
    from shop.messaging.logging import configure_logging  # noqa: PLC0415
    from shop.messaging.metrics import Metrics  # noqa: PLC0415
    from shop.messaging.outcome import Ack  # noqa: PLC0415
    from shop.messaging.pipeline import OutcomeRecord  # noqa: PLC0415
    from shop.messaging.tracing.provider import TracingSettings, configure_tracing  # noqa: PLC0415
    from shop.messaging.transports import create_transport  # noqa: PLC0415

    configure_logging(json=True)  # as every worker: JSON lines, INFO and above
    folder = Path(tempfile.mkdtemp(prefix="bench-spans-"))
    if spans:
        tracing = TracingSettings(exporter="file", file_dir=folder)
        configure_tracing(tracing, service_name="bench", process_kind="worker")
    url = args.database_url.replace("postgresql://", "postgresql+asyncpg://", 1)
    engine = create_engine(url, pool_size=POOL)
    settings = MessagingSettings.model_validate(args.messaging)
    router = Router(args.group)
    consumed = text(
        "INSERT INTO consumed (consumer, event_id, order_number) VALUES (:consumer, :id, :number)"
    )

    @router.subscriber(OrderCreated, max_in_flight=IN_FLIGHT)
    async def record(event: OrderCreated, context: MessageContext) -> None:
        await context.session.execute(
            consumed,
            {"consumer": args.group, "id": context.envelope.event_id, "number": event.order_number},
        )

    def observe(record: OutcomeRecord) -> None:
        if record.outcome != Ack():  # a retry, a dead letter or a duplicate is no message done
            return
        clock.tick()
        if clock.done.is_set():
            worker.stop()

    worker = Worker(
        settings,
        create_transport(settings),
        routers=[router],
        sessions=session_factory(engine),
        metrics=Metrics(),
        observers=[observe],
        on_close=[engine.dispose],
    )
    await worker.run()


SIDES: dict[str, Callable[[argparse.Namespace, Clock], Awaitable[None]]] = {
    "faststream": faststream_kafka,
    "library": lambda args, clock: library(args, clock, spans=False),
    "library+spans": lambda args, clock: library(args, clock, spans=True),
}


async def main(args: argparse.Namespace) -> None:
    clock = Clock(args.count)
    if args.side == "bare":
        bare = bare_kafka if args.messaging["transport"] == "kafka" else bare_sqs
        await bare(args, clock)
    else:
        await SIDES[args.side](args, clock)
    if not clock.done.is_set():
        raise SystemExit(f"stopped after {clock.handled} of {clock.count} messages")
    print(json.dumps(clock.figures()), flush=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--side", required=True, choices=("bare", *SIDES))
    parser.add_argument("--group", required=True)
    parser.add_argument("--count", type=int, required=True)
    parser.add_argument("--messaging", type=json.loads, required=True)
    parser.add_argument("--database-url", required=True)
    asyncio.run(main(parser.parse_args()))
