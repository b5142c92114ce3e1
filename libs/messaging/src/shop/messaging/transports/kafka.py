"""Kafka: a topic per message type, one consumer group per consuming service.

A failed message goes to one of its group's delay topics (named after the nominal delay,
so each topic's messages fall due in roughly the order they arrive) and comes back when
due; a message given up on goes to the group's dead-letter topic. Offsets are committed
only up to the first message whose outcome is not yet durable, so a crash or rebalance
delivers again whatever was not finished, never skips it.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from functools import partial
from typing import Any, Final

import structlog
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, ConsumerRebalanceListener, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from aiokafka.errors import BrokerResponseError, KafkaError, TopicAlreadyExistsError, for_code

from shop.contracts import ALL_CONTRACTS
from shop.messaging import headers as h
from shop.messaging.deadletters import (
    StoredDeadLetter,
    dead_letter_headers,
    read_dead_letter,
    redrive_each,
)
from shop.messaging.dispatch import KeyedDispatcher
from shop.messaging.errors import MessagingError, PublishError
from shop.messaging.message import Delivery, OutgoingMessage
from shop.messaging.naming import Naming
from shop.messaging.outcome import Ack, DeadLetter, Outcome, Retry
from shop.messaging.pipeline import Pipeline
from shop.messaging.retry import RetryPolicy
from shop.messaging.settings import KafkaSettings
from shop.messaging.subscriber import Router
from shop.messaging.transports.base import ConsumerLifecycle, ConsumerOptions

log = structlog.get_logger("shop.messaging")

POLL_TIMEOUT_MS: Final = 250
"""How long one fetch waits for records before asking again (a fetch is also the group's
sign that this member is alive)."""
COMMIT_INTERVAL: Final = 0.5
"""Seconds between commits of the offsets whose outcomes are durable."""
PRODUCE_BACKOFF: Final = (0.1, 5.0)
"""First and longest pause between tries to make an outcome durable."""
COMMIT_TIMEOUT: Final = 10.0
"""Longest wait for one commit (the client would otherwise wait for the broker forever)."""
READ_TIMEOUT: Final = 30.0
"""Longest time listing a dead-letter topic may take to read it to its end."""

Partition = tuple[str, int]
"""(topic, partition), typed, where aiokafka's ``TopicPartition`` would be untyped."""


# --- small conversions at the edge of the untyped client -------------------------------


@dataclass(frozen=True, slots=True)
class _Record:
    """One consumed record, with typed fields (aiokafka's records are untyped here)."""

    topic: str
    partition: int
    offset: int
    timestamp: int
    key: str | None
    body: bytes
    headers: dict[str, str]

    @classmethod
    def of(cls, raw: Any) -> _Record:
        key: bytes | None = raw.key
        value: bytes | None = raw.value
        return cls(
            topic=str(raw.topic),
            partition=int(raw.partition),
            offset=int(raw.offset),
            timestamp=int(raw.timestamp),
            key=None if key is None else key.decode("utf-8", errors="replace"),
            body=b"" if value is None else bytes(value),
            headers=_decode_headers(raw.headers),
        )

    @property
    def id(self) -> str:
        return f"{self.partition}-{self.offset}"


def _decode_headers(raw: Iterable[tuple[str, bytes | None]] | None) -> dict[str, str]:
    # Replacing undecodable bytes keeps one foreign header from stopping the consumer.
    return {name: (value or b"").decode("utf-8", errors="replace") for name, value in (raw or ())}


def _encode_headers(headers: Mapping[str, str]) -> list[tuple[str, bytes]]:
    return [(name, value.encode()) for name, value in headers.items()]


def _key_bytes(key: str | None) -> bytes | None:
    return None if key is None else key.encode()


def _tp(partition: Partition) -> Any:
    return TopicPartition(partition[0], partition[1])


def _epoch_ms(seconds_from_now: float = 0.0) -> int:
    return int((time.time() + seconds_from_now) * 1000)


def group_id(naming: Naming, group: str) -> str:
    """The Kafka consumer group of a consuming service, behind the namespace if any."""
    return f"{naming.namespace}-{group}" if naming.namespace else group


def delay_seconds(router: Router) -> list[float]:
    """The nominal delays of the group's delay topics: 0 s (redrives) and every nominal
    delay any subscriber's retry policy can ask for."""
    delays = {0.0}
    for subscriber in router:
        delays.update(subscriber.retry.nominal_delays())
    return sorted(delays)


# --- producing --------------------------------------------------------------------------


class _Producer:
    """The typed surface of the aiokafka producer that this module uses."""

    def __init__(self, kafka: Any) -> None:
        self._kafka = kafka

    @classmethod
    async def start(cls, settings: KafkaSettings) -> _Producer:
        try:
            return await cls._start(settings, idempotent=True)
        except BrokerResponseError as error:
            # The broker answered, but refused a producer id (Tansu does): without
            # idempotence a producer retry may write a message twice, which consumers
            # absorb (delivery is at least once anyway). Order per partition still holds:
            # the client keeps one request in flight per partition.
            log.warning(
                "broker refused an idempotent producer; producing without idempotence",
                error=repr(error),
            )
            return await cls._start(settings, idempotent=False)

    @classmethod
    async def _start(cls, settings: KafkaSettings, *, idempotent: bool) -> _Producer:
        kafka = AIOKafkaProducer(
            bootstrap_servers=settings.bootstrap_servers,
            client_id=settings.client_id,
            acks="all",
            linger_ms=settings.linger_ms,
            request_timeout_ms=settings.request_timeout_ms,
            enable_idempotence=idempotent,
        )
        try:
            await kafka.start()
        except BaseException:
            await kafka.stop()
            raise
        return cls(kafka)

    async def enqueue(
        self, topic: str, body: bytes, headers: Mapping[str, str], key: str | None
    ) -> asyncio.Future[object]:
        """Hand one record to the producer's batch; the future settles when it is written."""
        future: asyncio.Future[object] = await self._kafka.send(
            topic, value=body, key=_key_bytes(key), headers=_encode_headers(headers)
        )
        return future

    async def send(
        self, topic: str, body: bytes, headers: Mapping[str, str], key: str | None
    ) -> None:
        """Write one record and wait until the broker has it."""
        await (await self.enqueue(topic, body, headers, key))

    async def stop(self) -> None:
        await self._kafka.stop()


# --- the transport ------------------------------------------------------------------------


class KafkaTransport:
    name = "kafka"

    def __init__(self, settings: KafkaSettings, naming: Naming | None = None) -> None:
        self.settings = settings
        self.naming = naming or Naming()
        self._producer: _Producer | None = None
        self._admin: Any = None
        self._store = KafkaDeadLetterStore(self)
        # Concurrent publish calls hand their records over one call after the other, so
        # that each key keeps the order of the calls (the relay overlaps two batches).
        self._handing_over = asyncio.Lock()

    async def start(self) -> None:
        if self._producer is not None:
            return
        try:
            admin = AIOKafkaAdminClient(
                bootstrap_servers=self.settings.bootstrap_servers,
                client_id=self.settings.client_id,
            )
            self._admin = admin
            await admin.start()
            self._producer = await _Producer.start(self.settings)
            await self.create_topics(self.naming.topic(c) for c in ALL_CONTRACTS)
        except BaseException:
            await self.close()
            raise

    async def close(self) -> None:
        producer, self._producer = self._producer, None
        admin, self._admin = self._admin, None
        try:
            if producer is not None:
                await producer.stop()
        finally:
            if admin is not None:
                await admin.close()

    async def declare(self, pipeline: Pipeline) -> None:
        group = pipeline.group
        await self.create_topics(
            [
                *(self.naming.topic(subscriber.contract) for subscriber in pipeline.router),
                *(self.naming.delay_topic(group, s) for s in delay_seconds(pipeline.router)),
                self.naming.dead_letters(group),
            ]
        )

    async def create_topics(self, names: Iterable[str]) -> None:
        """Create the topics that are missing, with the configured partitions and
        replication; topics that exist are left as they are."""
        admin = self._started(self._admin)
        wanted = sorted(set(names))
        if not wanted:
            return
        response = await admin.create_topics(
            [
                NewTopic(name, self.settings.partitions, self.settings.replication_factor)
                for name in wanted
            ]
        )
        for entry in response.topic_errors:
            name, code = str(entry[0]), int(entry[1])
            if code in (0, TopicAlreadyExistsError.errno):
                continue
            detail = entry[2] if len(entry) > 2 else None
            raise for_code(code)(f"cannot create topic {name!r}: {detail}")

    async def publish(self, messages: Sequence[OutgoingMessage]) -> None:
        producer = self.producer
        enqueued: list[tuple[int, asyncio.Future[object]]] = []
        errors: dict[int, BaseException] = {}
        async with self._handing_over:
            for index, message in enumerate(messages):
                try:
                    future = await producer.enqueue(
                        message.topic, message.body, message.headers, message.key
                    )
                except KafkaError as error:
                    # The rest were not even handed over: report them all, in order.
                    errors.update(dict.fromkeys(range(index, len(messages)), error))
                    break
                enqueued.append((index, future))
        results = await asyncio.gather(*(f for _, f in enqueued), return_exceptions=True)
        for (index, _), result in zip(enqueued, results, strict=True):
            if isinstance(result, BaseException):
                errors[index] = result
        if errors:
            raise PublishError(set(errors), errors[min(errors)])

    def consumer(self, pipeline: Pipeline, options: ConsumerOptions) -> KafkaConsumer:
        return KafkaConsumer(self, pipeline, options)

    @property
    def dead_letter_store(self) -> KafkaDeadLetterStore:
        return self._store

    @property
    def producer(self) -> _Producer:
        if self._producer is None:
            raise MessagingError("the Kafka transport is not started")
        return self._producer

    async def topics(self) -> set[str]:
        """Names of the topics that exist (asking does not create any, unlike a
        metadata request naming a topic, which some brokers answer by creating it)."""
        admin = self._started(self._admin)
        names: Iterable[str] = await admin.list_topics()
        return set(names)

    async def partitions(self, topic: str) -> list[int]:
        """Partition numbers of ``topic``; none when it does not exist."""
        if topic not in await self.topics():
            return []
        admin = self._started(self._admin)
        described: list[dict[str, Any]] = await admin.describe_topics([topic])
        return sorted(int(p["partition"]) for d in described for p in d["partitions"])

    @staticmethod
    def _started(client: Any) -> Any:
        if client is None:
            raise MessagingError("the Kafka transport is not started")
        return client


# --- consuming ----------------------------------------------------------------------------


@dataclass(slots=True)
class _Progress:
    """Offsets of one assigned partition: which are in flight, how far a commit may go.

    A new object per assignment, so that work finishing after its partition was revoked
    updates a forgotten object and never the next owner's commits.
    """

    in_flight: set[int] = field(default_factory=set)
    next_offset: int | None = None
    committed: int | None = None

    def dispatched(self, offset: int) -> None:
        self.in_flight.add(offset)
        self.next_offset = max(self.next_offset or 0, offset + 1)

    def completed(self, offset: int) -> None:
        self.in_flight.discard(offset)

    def commit_offset(self) -> int | None:
        """The offset to commit (where a new owner would start): the oldest unfinished
        message, or just past the last one handed out when all are finished."""
        if self.in_flight:
            return min(self.in_flight)
        return self.next_offset

    def uncommitted(self) -> int | None:
        offset = self.commit_offset()
        return None if offset is None or offset == self.committed else offset


class _Rebalance(ConsumerRebalanceListener):  # type: ignore[misc]
    def __init__(
        self,
        revoked: Callable[[set[Partition]], Awaitable[None]],
        assigned: Callable[[set[Partition]], None],
    ) -> None:
        self._revoked = revoked
        self._assigned = assigned

    async def on_partitions_revoked(self, revoked: Iterable[Any]) -> None:
        await self._revoked({(str(tp.topic), int(tp.partition)) for tp in revoked})

    async def on_partitions_assigned(self, assigned: Iterable[Any]) -> None:
        self._assigned({(str(tp.topic), int(tp.partition)) for tp in assigned})


class KafkaConsumer(ConsumerLifecycle):
    """One consumer-group member for one consuming service: its event topics and its
    delay topics, many messages in flight, one at a time per key."""

    def __init__(
        self, transport: KafkaTransport, pipeline: Pipeline, options: ConsumerOptions
    ) -> None:
        super().__init__()
        self.transport = transport
        self.pipeline = pipeline
        self.group = pipeline.group
        self.options = options
        naming = transport.naming
        self.group_id = group_id(naming, self.group)
        self.event_topics = sorted({naming.topic(s.contract) for s in pipeline.router})
        self.delay_topics = sorted(
            {naming.delay_topic(self.group, s) for s in delay_seconds(pipeline.router)}
        )
        self._retry_delays = [s for s in delay_seconds(pipeline.router) if s > 0]
        self._kafka: Any = None
        self._progress: dict[Partition, _Progress] = {}
        self._resumes: dict[Partition, asyncio.TimerHandle] = {}
        self._commit_lock = asyncio.Lock()
        self._failure: BaseException | None = None

    async def run(self) -> None:
        kafka = AIOKafkaConsumer(
            bootstrap_servers=self.transport.settings.bootstrap_servers,
            client_id=self.transport.settings.client_id,
            group_id=self.group_id,
            enable_auto_commit=False,
            auto_offset_reset="earliest",
            session_timeout_ms=self.transport.settings.session_timeout_ms,
            heartbeat_interval_ms=max(self.transport.settings.session_timeout_ms // 3, 100),
        )
        kafka.subscribe(
            topics=[*self.event_topics, *self.delay_topics],
            listener=_Rebalance(self._partitions_revoked, self._partitions_assigned),
        )
        self._kafka = kafka
        try:
            await kafka.start()
            await self._run(kafka)
        finally:
            await kafka.stop()  # leaves the group, so the partitions move on at once
            self._kafka = None

    async def _run(self, kafka: Any) -> None:
        dispatcher = KeyedDispatcher(self.options.max_in_flight)
        self._running = True
        log.info(
            "kafka consumer started",
            group=self.group_id,
            topics=[*self.event_topics, *self.delay_topics],
        )
        fetching = asyncio.create_task(self._consume(kafka, dispatcher))
        committing = asyncio.create_task(self._commit_periodically())
        stopping = asyncio.create_task(self._stopping.wait())
        try:
            await asyncio.wait(
                {fetching, committing, stopping}, return_when=asyncio.FIRST_COMPLETED
            )
        finally:
            # Cancelled, not left to notice the stop: it may be waiting for a free slot
            # that only the drain below would free. A record it had marked but not yet
            # handed over stays in flight, so no commit passes it.
            for task in (fetching, committing, stopping):
                task.cancel()
            await asyncio.wait({fetching, committing, stopping})
            self._running = False
            self._cancel_resumes(set(self._resumes))
            finished = await dispatcher.drain(self.options.drain_timeout)
            if not finished:
                log.warning(
                    "messages still in flight at shutdown were abandoned; "
                    "they will be delivered again",
                    group=self.group_id,
                )
            await self._commit(set(self._progress))
            log.info("kafka consumer stopped", group=self.group_id)
        for task in (fetching, committing):
            if not task.cancelled() and (error := task.exception()) is not None:
                raise error
        if self._failure is not None:
            raise self._failure

    async def _consume(self, kafka: Any, dispatcher: KeyedDispatcher) -> None:
        while True:
            # No more records at a time than can be handled at once: handing over a batch
            # waits for free slots, and the group counts a member that does not fetch
            # again within max_poll_interval as gone (its partitions then move on while
            # it still handles them). A backlog is worked off a handful at a time.
            batch: dict[Any, list[Any]] = await kafka.getmany(
                timeout_ms=POLL_TIMEOUT_MS, max_records=self.options.max_in_flight
            )
            for tp, records in batch.items():
                partition = (str(tp.topic), int(tp.partition))
                await self._dispatch(partition, [_Record.of(r) for r in records], dispatcher)

    async def _commit_periodically(self) -> None:
        """Commits on a clock of their own, not between fetches: a fetch can wait for
        free slots as long as the slowest handler takes."""
        while True:
            await asyncio.sleep(COMMIT_INTERVAL)
            await self._commit(set(self._progress))

    async def _dispatch(
        self, partition: Partition, records: list[_Record], dispatcher: KeyedDispatcher
    ) -> None:
        progress = self._tracked(partition)
        if progress is None:
            return
        for record in records:
            if self._stopping.is_set() or self._tracked(partition) is not progress:
                return  # stopping, or revoked while waiting for a free slot
            wait = self._seconds_until_due(record)
            if wait > 0:
                self._hold(partition, record.offset, wait)
                return
            delivery = self._delivery(record)
            progress.dispatched(record.offset)
            await dispatcher.submit(
                self._serial_key(record, delivery),
                partial(self._handle, delivery, progress, record.offset),
            )

    def _tracked(self, partition: Partition) -> _Progress | None:
        """The progress of ``partition`` while this member owns it, else None."""
        if _tp(partition) not in self._kafka.assignment():
            return None
        # Records can come before the assignment callback has run: track them already.
        return self._progress.setdefault(partition, _Progress())

    def _seconds_until_due(self, record: _Record) -> float:
        due = record.headers.get(h.DUE_AT)
        if due is None or record.topic not in self.delay_topics:
            return 0.0
        try:
            return max(0.0, (int(due) - _epoch_ms()) / 1000)
        except ValueError:
            log.warning("ignoring unreadable due time", topic=record.topic, due_at=due)
            return 0.0

    def _hold(self, partition: Partition, offset: int, wait: float) -> None:
        """Leave a delayed message where it is until it is due, without taking a handler
        slot: stop fetching its partition, rewind to it, and resume when due."""
        tp = _tp(partition)  # owned: ``_tracked`` just said so, with no await since
        self._kafka.pause(tp)
        self._kafka.seek(tp, offset)
        loop = asyncio.get_running_loop()
        self._cancel_resumes({partition})
        self._resumes[partition] = loop.call_later(wait, self._resume, partition)

    def _resume(self, partition: Partition) -> None:
        self._resumes.pop(partition, None)
        kafka = self._kafka
        if kafka is None or self._stopping.is_set():
            return
        tp = _tp(partition)
        if tp in kafka.assignment():
            kafka.resume(tp)

    def _cancel_resumes(self, partitions: set[Partition]) -> None:
        for partition in partitions:
            timer = self._resumes.pop(partition, None)
            if timer is not None:
                timer.cancel()

    def _delivery(self, record: _Record) -> Delivery:
        if record.topic not in self.delay_topics:
            # Event topics carry what producers wrote: every message there is a first try.
            return Delivery(
                body=record.body, headers=record.headers, source=record.topic, key=record.key
            )
        return Delivery(
            body=record.body,
            headers=record.headers,
            source=record.headers.get(h.ORIGIN) or record.topic,
            attempt=self._previous_attempts(record) + 1,
            first_failure_at=_header_datetime(record, h.FIRST_FAILURE_AT),
            key=record.key,
        )

    def _previous_attempts(self, record: _Record) -> int:
        value = record.headers.get(h.ATTEMPT)
        if value is None:
            return 0  # redriven: attempts start again
        try:
            return int(value)
        except ValueError:
            log.warning("ignoring unreadable attempt count", topic=record.topic, attempt=value)
            return 0

    @staticmethod
    def _serial_key(record: _Record, delivery: Delivery) -> tuple[str, str]:
        # By the original topic, so a key's retries and its new messages do not overlap;
        # a message without a key has no order to keep.
        if delivery.key is None:
            return (delivery.source, f"{record.topic}:{record.id}")
        return (delivery.source, delivery.key)

    async def _handle(self, delivery: Delivery, progress: _Progress, offset: int) -> None:
        try:
            outcome = await self.pipeline.process(delivery)
            await self._settle(delivery, outcome)
        except Exception as error:
            # The pipeline turns every handler failure into an outcome, so this is a bug.
            # This offset can never be committed now, nor any after it: stop, so that the
            # worker fails loudly and the restarted consumer gets the message again.
            log.exception("consumer failed on a message; stopping", group=self.group_id)
            self._failure = self._failure or error
            self.stop()
            raise
        progress.completed(offset)

    async def _settle(self, delivery: Delivery, outcome: Outcome) -> None:
        if isinstance(outcome, Ack):
            return
        if isinstance(outcome, Retry):
            await self._produce_until_written(
                self.transport.naming.delay_topic(self.group, self._delay_for(delivery, outcome)),
                delivery,
                {
                    **h.original_headers(dict(delivery.headers)),
                    h.ATTEMPT: str(outcome.attempt),
                    h.FIRST_FAILURE_AT: outcome.first_failure_at.isoformat(),
                    h.DUE_AT: str(_epoch_ms(outcome.delay)),
                    h.ORIGIN: delivery.source,
                },
            )
            return
        assert isinstance(outcome, DeadLetter)
        await self._produce_until_written(
            self.transport.naming.dead_letters(self.group),
            delivery,
            dead_letter_headers(self.group, delivery, outcome),
        )

    def _delay_for(self, delivery: Delivery, outcome: Retry) -> float:
        """The nominal delay that names the delay topic of this retry: the subscriber's
        schedule, held to the delay topics that were declared for the group."""
        subscriber = self.pipeline.router.for_type(delivery.headers.get(h.MESSAGE_TYPE, ""))
        policy = subscriber.retry if subscriber is not None else RetryPolicy()
        nominal = policy.nominal_delay(outcome.attempt)
        if not self._retry_delays:
            return 0.0
        return min(self._retry_delays, key=lambda declared: abs(declared - nominal))

    async def _produce_until_written(
        self, topic: str, delivery: Delivery, headers: Mapping[str, str]
    ) -> None:
        """The outcome must be durable before the message counts as done: try until it is
        written. Shutdown ends the tries by cancelling, and the message stays uncommitted."""
        pause, longest = PRODUCE_BACKOFF
        while True:
            try:
                await self.transport.producer.send(topic, delivery.body, headers, delivery.key)
                return
            except KafkaError as error:
                log.warning(
                    "could not write the outcome of a message; trying again",
                    topic=topic,
                    source=delivery.source,
                    error=repr(error),
                    retry_in=pause,
                )
            await asyncio.sleep(pause)
            pause = min(pause * 2, longest)

    async def _commit(self, partitions: set[Partition]) -> None:
        kafka = self._kafka
        if kafka is None:
            return
        async with self._commit_lock:
            offsets = {
                partition: offset
                for partition in partitions
                if (progress := self._progress.get(partition)) is not None
                and (offset := progress.uncommitted()) is not None
            }
            if not offsets:
                return
            try:
                async with asyncio.timeout(COMMIT_TIMEOUT):
                    await kafka.commit({_tp(p): offset for p, offset in offsets.items()})
            except (KafkaError, TimeoutError) as error:
                # Not fatal: the next commit carries these offsets, or the new owner of a
                # revoked partition handles its uncommitted messages again.
                log.warning("could not commit offsets", group=self.group_id, error=repr(error))
                return
            for partition, offset in offsets.items():
                progress = self._progress.get(partition)
                if progress is not None:
                    progress.committed = offset

    async def _partitions_revoked(self, revoked: set[Partition]) -> None:
        self._cancel_resumes(revoked)
        await self._commit(revoked)
        for partition in revoked:
            self._progress.pop(partition, None)

    def _partitions_assigned(self, assigned: set[Partition]) -> None:
        for partition in assigned:
            # Kept when records of it were already dispatched (see ``_tracked``).
            self._progress.setdefault(partition, _Progress())
        log.info("partitions assigned", group=self.group_id, partitions=len(assigned))


def _header_datetime(record: _Record, name: str) -> datetime | None:
    value = record.headers.get(name)
    if value is None:
        return None
    try:
        return datetime.fromisoformat(value)
    except ValueError:
        log.warning("ignoring unreadable time header", topic=record.topic, header=name)
        return None


# --- dead letters -------------------------------------------------------------------------


class KafkaDeadLetterStore:
    """A group's dead letters are its dead-letter topic, less those a marker settled."""

    def __init__(self, transport: KafkaTransport) -> None:
        self.transport = transport

    async def list(self, group: str) -> list[StoredDeadLetter]:
        records = await _read_topic(self.transport, self.transport.naming.dead_letters(group))
        settled = {
            r.headers[h.DEAD_LETTER_RESOLVES]
            for r in records
            if h.DEAD_LETTER_RESOLVES in r.headers
        }
        letters = [
            r for r in records if h.DEAD_LETTER_RESOLVES not in r.headers and r.id not in settled
        ]
        letters.sort(key=lambda r: (r.timestamp, r.partition, r.offset))
        return [read_dead_letter(r.id, r.body, r.headers, key=r.key) for r in letters]

    async def redrive(self, group: str, letter: StoredDeadLetter) -> None:
        # The 0 s delay topic belongs to this group alone, so only the consumer that
        # failed sees the message again; without an attempt count it starts afresh.
        await self.transport.producer.send(
            self.transport.naming.delay_topic(group, 0),
            letter.body,
            {**h.original_headers(dict(letter.headers)), h.ORIGIN: letter.source},
            letter.key,
        )
        await self._mark_settled(group, [letter])

    async def redrive_all(self, group: str, *, per_second: float) -> int:
        return await redrive_each(self, group, await self.list(group), per_second)

    async def purge(self, group: str, letters: Sequence[StoredDeadLetter]) -> None:
        await self._mark_settled(group, letters)

    async def _mark_settled(self, group: str, letters: Sequence[StoredDeadLetter]) -> None:
        topic = self.transport.naming.dead_letters(group)
        producer = self.transport.producer
        futures = [
            await producer.enqueue(topic, b"", {h.DEAD_LETTER_RESOLVES: x.id}, None)
            for x in letters
        ]
        await asyncio.gather(*futures)


async def _read_topic(transport: KafkaTransport, topic: str) -> list[_Record]:
    """Every record of ``topic`` from its beginning to its current end."""
    partitions = await transport.partitions(topic)
    if not partitions:
        return []
    settings = transport.settings
    kafka = AIOKafkaConsumer(
        bootstrap_servers=settings.bootstrap_servers,
        client_id=settings.client_id,
        group_id=None,
        enable_auto_commit=False,
        auto_offset_reset="earliest",
    )
    try:
        await kafka.start()
        tps = [TopicPartition(topic, p) for p in partitions]
        kafka.assign(tps)
        await kafka.seek_to_beginning(*tps)
        return await _read_to_end(kafka, tps)
    finally:
        await kafka.stop()


async def _read_to_end(kafka: Any, tps: list[Any]) -> list[_Record]:
    # The end is the high watermark each fetch reports: some brokers (Tansu) answer an
    # end-offsets request with the start of the last batch instead.
    records: list[_Record] = []
    deadline = time.monotonic() + READ_TIMEOUT
    while not await _read_to_high_watermark(kafka, tps):
        if time.monotonic() > deadline:
            raise MessagingError(f"could not read {tps[0].topic} to its end")
        batch: dict[Any, list[Any]] = await kafka.getmany(*tps, timeout_ms=POLL_TIMEOUT_MS)
        records.extend(_Record.of(r) for rs in batch.values() for r in rs)
    return records


async def _read_to_high_watermark(kafka: Any, tps: list[Any]) -> bool:
    for tp in tps:
        highwater: int | None = kafka.highwater(tp)
        if highwater is None:
            return False
        position: int = await kafka.position(tp)
        if position < highwater:
            return False
    return True
