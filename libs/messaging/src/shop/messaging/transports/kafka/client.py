"""Every call this package makes to aiokafka, behind typed methods: the admin client and
the producer of a transport, a member of a consumer group, and a reader of a whole topic.

aiokafka is untyped here; partitions leave this module as ``(topic, number)`` tuples and
records as :class:`~shop.messaging.transports.kafka.wire.KafkaRecord`, so that nothing
else in the package holds an aiokafka object.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from typing import Any, Final

import structlog
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, ConsumerRebalanceListener, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from aiokafka.errors import BrokerResponseError, KafkaError, TopicAlreadyExistsError, for_code

from shop.messaging.errors import MessagingError
from shop.messaging.settings import KafkaSettings
from shop.messaging.transports.kafka.wire import (
    KafkaRecord,
    decode_headers,
    decode_key,
    encode_headers,
    encode_key,
)

__all__ = [
    "GroupMember",
    "KafkaClient",
    "KafkaError",
    "KafkaProducer",
    "Partition",
]

log = structlog.get_logger("shop.messaging")

_POLL_TIMEOUT_MS: Final = 250
"""How long one fetch waits for records before asking again (a fetch is also the group's
sign that this member is alive)."""
_READ_TIMEOUT: Final = 30.0
"""Longest time reading a topic to its end may take (listing dead letters does)."""
_NOT_STARTED: Final = "the Kafka transport is not started"

Partition = tuple[str, int]
"""(topic, partition), typed, where aiokafka's ``TopicPartition`` would be untyped."""
_Revoked = Callable[[set[Partition]], Awaitable[None]]
_Assigned = Callable[[set[Partition]], None]


def _tp(partition: Partition) -> Any:
    return TopicPartition(partition[0], partition[1])


def _partition(tp: Any) -> Partition:
    return (str(tp.topic), int(tp.partition))


def _record(raw: Any) -> KafkaRecord:
    key: bytes | None = raw.key
    value: bytes | None = raw.value
    return KafkaRecord(
        topic=str(raw.topic),
        partition=int(raw.partition),
        offset=int(raw.offset),
        timestamp=int(raw.timestamp),
        key=decode_key(key),
        body=b"" if value is None else bytes(value),
        headers=decode_headers(raw.headers),
    )


class KafkaProducer:
    """The producer's calls: hand a record over, or write it and wait."""

    def __init__(self, kafka: Any) -> None:
        self._kafka = kafka

    @classmethod
    async def start(cls, settings: KafkaSettings) -> KafkaProducer:
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
    async def _start(cls, settings: KafkaSettings, *, idempotent: bool) -> KafkaProducer:
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
            topic, value=body, key=encode_key(key), headers=encode_headers(headers)
        )
        return future

    async def send(
        self, topic: str, body: bytes, headers: Mapping[str, str], key: str | None
    ) -> None:
        """Write one record and wait until the broker has it."""
        await (await self.enqueue(topic, body, headers, key))

    async def stop(self) -> None:
        await self._kafka.stop()


class KafkaClient:
    """The admin client and the producer of one transport, started and closed together,
    and the consumers it makes from the same settings."""

    def __init__(self, settings: KafkaSettings) -> None:
        self._settings = settings
        self._admin: Any = None
        self._producer: KafkaProducer | None = None

    @property
    def started(self) -> bool:
        return self._producer is not None

    async def start(self) -> None:
        """Connect the admin client, then the producer; on failure the caller closes."""
        admin = AIOKafkaAdminClient(
            bootstrap_servers=self._settings.bootstrap_servers,
            client_id=self._settings.client_id,
        )
        self._admin = admin
        await admin.start()
        self._producer = await KafkaProducer.start(self._settings)

    async def close(self) -> None:
        producer, self._producer = self._producer, None
        admin, self._admin = self._admin, None
        try:
            if producer is not None:
                await producer.stop()
        finally:
            if admin is not None:
                await admin.close()

    @property
    def producer(self) -> KafkaProducer:
        if self._producer is None:
            raise MessagingError(_NOT_STARTED)
        return self._producer

    def _started_admin(self) -> Any:
        if self._admin is None:
            raise MessagingError(_NOT_STARTED)
        return self._admin

    async def create_topics(self, names: Iterable[str]) -> None:
        """Create the topics that are missing, with the configured partitions and
        replication; topics that exist are left as they are."""
        admin = self._started_admin()
        wanted = sorted(set(names))
        if not wanted:
            return
        response = await admin.create_topics(
            [
                NewTopic(name, self._settings.partitions, self._settings.replication_factor)
                for name in wanted
            ]
        )
        for entry in response.topic_errors:
            name, code = str(entry[0]), int(entry[1])
            if code in (0, TopicAlreadyExistsError.errno):
                continue
            detail = entry[2] if len(entry) > 2 else None
            raise for_code(code)(f"cannot create topic {name!r}: {detail}")

    async def topics(self) -> set[str]:
        """Names of the topics that exist (asking does not create any, unlike a
        metadata request naming a topic, which some brokers answer by creating it)."""
        names: Iterable[str] = await self._started_admin().list_topics()
        return set(names)

    async def partitions(self, topic: str) -> list[int]:
        """Partition numbers of ``topic``; none when it does not exist."""
        if topic not in await self.topics():
            return []
        described: list[dict[str, Any]] = await self._started_admin().describe_topics([topic])
        return sorted(int(p["partition"]) for d in described for p in d["partitions"])

    async def read_topic(self, topic: str) -> list[KafkaRecord]:
        """Every record of ``topic`` from its beginning to its current end, read outside
        any consumer group (nothing is committed)."""
        partitions = await self.partitions(topic)
        if not partitions:
            return []
        kafka = AIOKafkaConsumer(
            bootstrap_servers=self._settings.bootstrap_servers,
            client_id=self._settings.client_id,
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

    def group_member(
        self, group_id: str, topics: Sequence[str], *, revoked: _Revoked, assigned: _Assigned
    ) -> GroupMember:
        """A member of ``group_id`` subscribed to ``topics`` (not started yet)."""
        return GroupMember(self._settings, group_id, topics, revoked=revoked, assigned=assigned)


class GroupMember:
    """One member of a consumer group: it fetches from the partitions the group assigns
    it, can hold one back, and commits offsets explicitly (never automatically)."""

    def __init__(
        self,
        settings: KafkaSettings,
        group_id: str,
        topics: Sequence[str],
        *,
        revoked: _Revoked,
        assigned: _Assigned,
    ) -> None:
        self._kafka = AIOKafkaConsumer(
            bootstrap_servers=settings.bootstrap_servers,
            client_id=settings.client_id,
            group_id=group_id,
            enable_auto_commit=False,
            auto_offset_reset="earliest",
            session_timeout_ms=settings.session_timeout_ms,
            heartbeat_interval_ms=max(settings.session_timeout_ms // 3, 100),
        )
        self._kafka.subscribe(topics=list(topics), listener=_Rebalance(revoked, assigned))

    async def start(self) -> None:
        await self._kafka.start()

    async def stop(self) -> None:
        """Leave the group, so that its partitions move on to other members at once."""
        await self._kafka.stop()

    async def fetch(self, max_records: int) -> dict[Partition, list[KafkaRecord]]:
        """Up to ``max_records`` records, by partition; none after a short wait."""
        batch: dict[Any, list[Any]] = await self._kafka.getmany(
            timeout_ms=_POLL_TIMEOUT_MS, max_records=max_records
        )
        return {_partition(tp): [_record(r) for r in records] for tp, records in batch.items()}

    def owns(self, partition: Partition) -> bool:
        """The group has assigned ``partition`` to this member (and not revoked it)."""
        return _tp(partition) in self._kafka.assignment()

    def pause_at(self, partition: Partition, offset: int) -> None:
        """Stop fetching ``partition`` and rewind it to ``offset``, where a resume starts."""
        tp = _tp(partition)
        self._kafka.pause(tp)
        self._kafka.seek(tp, offset)

    def resume(self, partition: Partition) -> None:
        self._kafka.resume(_tp(partition))

    async def commit(self, offsets: Mapping[Partition, int]) -> None:
        await self._kafka.commit({_tp(p): offset for p, offset in offsets.items()})


class _Rebalance(ConsumerRebalanceListener):  # type: ignore[misc]
    def __init__(self, revoked: _Revoked, assigned: _Assigned) -> None:
        self._revoked = revoked
        self._assigned = assigned

    async def on_partitions_revoked(self, revoked: Iterable[Any]) -> None:
        await self._revoked({_partition(tp) for tp in revoked})

    async def on_partitions_assigned(self, assigned: Iterable[Any]) -> None:
        self._assigned({_partition(tp) for tp in assigned})


async def _read_to_end(kafka: Any, tps: list[Any]) -> list[KafkaRecord]:
    # The end is the high watermark each fetch reports: some brokers (Tansu) answer an
    # end-offsets request with the start of the last batch instead.
    records: list[KafkaRecord] = []
    deadline = time.monotonic() + _READ_TIMEOUT
    while not await _read_to_high_watermark(kafka, tps):
        if time.monotonic() > deadline:
            raise MessagingError(f"could not read {tps[0].topic} to its end")
        batch: dict[Any, list[Any]] = await kafka.getmany(*tps, timeout_ms=_POLL_TIMEOUT_MS)
        records.extend(_record(r) for rs in batch.values() for r in rs)
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
