"""Every call this package makes to Kafka, behind typed methods: FastStream's
:class:`~faststream.kafka.KafkaBroker` owns the connections (producer, admin client,
consumers), publishes retries and dead letters, and runs each consumer group as one of its
subscribers; the aiokafka objects underneath it are reached only where FastStream has no
way to say what the transport needs, all through :mod:`.underneath`, which says why.

What leaves this module is typed: partitions as ``(topic, number)`` tuples and records as
:class:`~shop.messaging.transports.kafka.wire.KafkaRecord`, so that nothing else in the
package calls FastStream or aiokafka (the broker and the subscribers are shown to whoever
wants to inspect them, as ``KafkaTransport.broker`` and ``KafkaConsumer.subscriber``).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from typing import Any, Final

import structlog
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, ConsumerRebalanceListener, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient
from aiokafka.errors import (
    BrokerResponseError,
    KafkaError,
    MessageSizeTooLargeError,
    TopicAlreadyExistsError,
)
from aiokafka.structs import ConsumerRecord, RecordMetadata
from faststream import AckPolicy
from faststream.kafka import KafkaBroker, Topic
from faststream.security import BaseSecurity

from shop.messaging import headers as h
from shop.messaging.errors import MessageTooLarge, MessagingError
from shop.messaging.settings import KafkaSettings
from shop.messaging.transports.kafka.security import broker_security, client_options
from shop.messaging.transports.kafka.topology import dead_letter_topic
from shop.messaging.transports.kafka.underneath import (
    FastStreamLog,
    FetchFailed,
    admin_client,
    committing_consumer,
    group_consumer,
    record_as_it_came,
    record_itself,
)
from shop.messaging.transports.kafka.wire import (
    KafkaRecord,
    decode_headers,
    decode_key,
    encode_key,
)

__all__ = [
    "GroupMember",
    "KafkaClient",
    "KafkaError",
    "Partition",
    "TopicReader",
]

log = structlog.get_logger("shop.messaging")

_NOT_STARTED: Final = "the Kafka transport is not started"

Partition = tuple[str, int]
"""(topic, partition), typed, where aiokafka's ``TopicPartition`` would be untyped."""
Receive = Callable[[KafkaRecord], Awaitable[None]]
_Revoked = Callable[[set[Partition]], Awaitable[None]]
_Assigned = Callable[[set[Partition]], None]


def _tp(partition: Partition) -> TopicPartition:
    return TopicPartition(partition[0], partition[1])


def _partition(tp: TopicPartition) -> Partition:
    return (str(tp.topic), int(tp.partition))


def _record(raw: ConsumerRecord[bytes, bytes]) -> KafkaRecord:
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


def _too_large(topic: str, body: bytes, error: BaseException) -> MessageTooLarge:
    return MessageTooLarge(f"{len(body)} bytes is too large for {topic}: {error}")


class KafkaClient:
    """One FastStream broker for one transport: started and stopped together, and the
    consumer-group members made from it."""

    def __init__(self, settings: KafkaSettings, *, broker: KafkaBroker | None = None) -> None:
        """``broker``: one made already, started and stopped by this client all the same
        (FastStream's ``TestKafkaBroker`` patches one for tests in memory); by default,
        one made from ``settings``."""
        self._settings = settings
        self._given = broker
        self._broker: KafkaBroker | None = None
        self._log = FastStreamLog()

    @property
    def started(self) -> bool:
        return self._broker is not None

    @property
    def broker(self) -> KafkaBroker:
        if self._broker is None:
            raise MessagingError(_NOT_STARTED)
        return self._broker

    async def start(self) -> None:
        """Connect the broker's producer and admin client."""
        if self._given is not None:
            await self._given.start()
            self._broker = self._given
            return
        # One security object for every connection: the broker hands it to its producer,
        # admin client and consumers (the dead letters' reader among them), the probe
        # below takes it as aiokafka's own options.
        security = broker_security(self._settings)
        idempotent = await _idempotence_accepted(self._settings, security)
        if not idempotent:
            # The broker refused a producer id (Tansu does): without idempotence a
            # producer retry may write a message twice, which consumers absorb (delivery
            # is at least once anyway). Order per partition still holds: the client keeps
            # one request in flight per partition.
            log.warning("broker refused an idempotent producer; producing without idempotence")
        self._broker = await _started_broker(
            self._settings, self._log, idempotent=idempotent, security=security
        )

    async def close(self) -> None:
        broker, self._broker = self._broker, None
        if broker is not None:
            await broker.stop()

    # -- publishing -------------------------------------------------------------------

    # FastStream's publish, unconfirmed: the future settles when Kafka has the record, so a
    # batch is handed over whole and then waited for. FastStream adds two headers of its
    # own: ``content-type`` (empty for bytes) and ``correlation_id``, given the shop's own
    # (one id for a conversation, and no uuid made per record); the producer's headers win
    # on a clash, so a retry or dead letter carries them as they were.

    async def enqueue(
        self, topic: str, body: bytes, headers: Mapping[str, str], key: str | None
    ) -> asyncio.Future[RecordMetadata]:
        """Hand one record to the producer's batch; the future settles when it is written."""
        try:
            sent: asyncio.Future[RecordMetadata] | None = await self.broker.publish(
                body,
                topic,
                key=encode_key(key),
                headers=dict(headers),
                correlation_id=headers.get(h.CORRELATION_ID),
                no_confirm=True,
            )
            if sent is None:
                sent = self._delivered_in_memory(topic)
            return sent
        except MessageSizeTooLargeError as error:
            raise _too_large(topic, body, error) from error

    def _delivered_in_memory(self, topic: str) -> asyncio.Future[RecordMetadata]:
        # FastStream's TestKafkaBroker delivers at once and hands back no future: a receipt
        # is made for it, and only for a broker the caller gave; from the shop's own, no
        # receipt would let the relay mark a row sent that Kafka never had.
        if self._given is None:
            raise MessagingError(f"publishing to {topic} gave no receipt to wait for")
        receipt: asyncio.Future[RecordMetadata] = asyncio.get_running_loop().create_future()
        receipt.set_result(RecordMetadata(topic, 0, TopicPartition(topic, 0), -1, -1, 0, -1))
        return receipt

    async def send(
        self, topic: str, body: bytes, headers: Mapping[str, str], key: str | None
    ) -> None:
        """Write one record and wait until Kafka has it."""
        try:
            await (await self.enqueue(topic, body, headers, key))
        except MessageSizeTooLargeError as error:  # the broker's own limit, if lower
            raise _too_large(topic, body, error) from error

    # -- topics -----------------------------------------------------------------------

    async def create_topics(self, names: Iterable[str]) -> None:
        """Create the topics that are missing, with the configured partitions and
        replication; topics that exist are left as they are. Raises on any refusal
        (FastStream's own topic creation would only log it)."""
        wanted = sorted(set(names))
        if not wanted:
            return
        topics = [
            Topic(
                name,
                num_partitions=self._settings.partitions,
                replication_factor=self._settings.replication_factor,
            )
            for name in wanted
        ]
        results = await self.broker.config.admin.create_topics(topics)
        for result in results:
            if result.error is not None:
                raise MessagingError(f"cannot create topic {result.topic!r}: {result.error}")

    async def create_topic_kept_for(self, name: str, retention_ms: int) -> None:
        """Create ``name`` (when missing) with an explicit ``retention.ms``, never the
        broker's default; an existing topic is left as it is."""
        if name in await self.topics():
            return
        topic = dead_letter_topic(
            name,
            partitions=self._settings.partitions,
            replication_factor=self._settings.replication_factor,
            retention_ms=retention_ms,
        )
        response = await self._admin().create_topics([topic])
        for topic_name, code, *message in response.topic_errors:
            if code not in {0, TopicAlreadyExistsError.errno}:
                raise MessagingError(f"cannot create topic {topic_name!r}: {code} {message}")

    async def topics(self) -> set[str]:
        """Names of the topics that exist (asking does not create any, unlike a
        metadata request naming a topic, which some brokers answer by creating it)."""
        names: Iterable[str] = await self._admin().list_topics()
        return set(names)

    async def partitions(self, topic: str) -> list[int]:
        """Partition numbers of ``topic``; none when it does not exist."""
        if topic not in await self.topics():
            return []
        described: list[dict[str, Any]] = await self._admin().describe_topics([topic])
        return sorted(int(p["partition"]) for d in described for p in d["partitions"])

    def _admin(self) -> AIOKafkaAdminClient:
        return admin_client(self.broker)

    def topic_reader(self, group_id: str, topic: str) -> TopicReader:
        """A reader of ``topic`` in the consumer group ``group_id`` (not started), which
        commits only what it is told is done."""
        kafka = committing_consumer(
            self.broker,
            group_id=group_id,
            client_id=self._settings.client_id,
            session_timeout_ms=self._settings.session_timeout_ms,
        )
        return TopicReader(kafka, topic)

    # -- consuming --------------------------------------------------------------------

    def group_member(
        self,
        group_id: str,
        topics: Sequence[str],
        *,
        receive: Receive,
        fetch_failed: FetchFailed,
        revoked: _Revoked,
        assigned: _Assigned,
    ) -> GroupMember:
        """A member of ``group_id`` subscribed to ``topics`` (not started yet), handing
        each record to ``receive`` and each failed fetch to ``fetch_failed``."""
        member = GroupMember(
            self.broker,
            self._settings,
            group_id,
            topics,
            receive=receive,
            revoked=revoked,
            assigned=assigned,
        )
        self._log.watch(member.subscriber, fetch_failed)
        return member


async def _idempotence_accepted(settings: KafkaSettings, security: BaseSecurity | None) -> bool:
    # Asked with a producer of its own: FastStream's broker leaves a producer that failed
    # to start unclosed, and would have to be built a second time.
    probe = AIOKafkaProducer(
        bootstrap_servers=settings.bootstrap_servers,
        client_id=settings.client_id,
        acks="all",
        enable_idempotence=True,
        **client_options(security),
    )
    try:
        await probe.start()
    except BrokerResponseError:
        return False
    finally:
        await probe.stop()
    return True


async def _started_broker(
    settings: KafkaSettings,
    logger: FastStreamLog,
    *,
    idempotent: bool,
    security: BaseSecurity | None,
) -> KafkaBroker:
    broker = KafkaBroker(
        settings.bootstrap_servers,
        security=security,
        client_id=settings.client_id,
        acks="all",
        linger_ms=settings.linger_ms,
        request_timeout_ms=settings.request_timeout_ms,
        max_request_size=settings.max_request_size,
        enable_idempotence=idempotent,
        logger=logger,
        # Handlers are given what the decoder returns, the record: no dependency injection,
        # whose per-message cost was a thread hop for FastStream's own context (most of a
        # message's overhead in a worker).
        apply_types=False,
        # One log line per message would drown the workers' own: FastStream's access log
        # goes to DEBUG; its warnings and errors still show.
        log_level=logging.DEBUG,
    )
    try:
        await broker.start()
    except BaseException:
        await broker.stop()
        raise
    return broker


class GroupMember:
    """One member of a consumer group: a FastStream subscriber over the consumer's topics
    that hands each record over as it comes, can hold a partition back, and commits
    offsets explicitly (never automatically, never by acknowledging a message).

    FastStream's acknowledgement commits the member's whole position (everything fetched,
    finished or not), so the subscriber runs with ``AckPolicy.MANUAL`` and is never
    acknowledged: the consumer commits up to its oldest unfinished message itself.
    """

    def __init__(
        self,
        broker: KafkaBroker,
        settings: KafkaSettings,
        group_id: str,
        topics: Sequence[str],
        *,
        receive: Receive,
        revoked: _Revoked,
        assigned: _Assigned,
    ) -> None:
        self.subscriber = broker.subscriber(
            # Declared by the transport already (where a refusal raises); declare=False
            # keeps FastStream from creating them again with its own defaults.
            *(Topic(topic, declare=False) for topic in topics),
            group_id=group_id,
            ack_policy=AckPolicy.MANUAL,
            auto_offset_reset="earliest",
            session_timeout_ms=settings.session_timeout_ms,
            heartbeat_interval_ms=max(settings.session_timeout_ms // 3, 100),
            max_poll_interval_ms=settings.max_poll_interval_ms,
            fetch_max_wait_ms=settings.fetch_max_wait_ms,
            listener=_Rebalance(revoked, assigned),
            parser=record_as_it_came,
            decoder=record_itself,
            # Made and started while the broker runs, stopped with its consumer.
            persistent=False,
        )

        @self.subscriber
        async def receive_record(raw: ConsumerRecord[bytes, bytes]) -> None:
            await receive(_record(raw))

    async def start(self) -> None:
        await self.subscriber.start()

    async def stop(self) -> None:
        """Leave the group, so that its partitions move on to other members at once."""
        await self.subscriber.stop()

    def _consumer(self) -> AIOKafkaConsumer | None:
        return group_consumer(self.subscriber)

    def _started(self) -> AIOKafkaConsumer:
        consumer = group_consumer(self.subscriber)
        if consumer is None:
            raise MessagingError("the consumer-group member is not started")
        return consumer

    def owns(self, partition: Partition) -> bool:
        """The group has assigned ``partition`` to this member (and not revoked it)."""
        consumer = self._consumer()
        return consumer is not None and _tp(partition) in consumer.assignment()

    def pause_at(self, partition: Partition, offset: int) -> None:
        """Stop fetching ``partition`` and rewind it to ``offset``, where a resume starts."""
        consumer = self._started()
        tp = _tp(partition)
        consumer.pause(tp)
        consumer.seek(tp, offset)

    def resume(self, partition: Partition) -> None:
        self._started().resume(_tp(partition))

    def pause_all(self) -> None:
        """Fetch nothing more (shutdown: what is in flight drains, nothing new starts)."""
        consumer = self._consumer()
        if consumer is not None:
            consumer.pause(*consumer.assignment())

    async def commit(self, offsets: Mapping[Partition, int]) -> None:
        await self._started().commit({_tp(p): offset for p, offset in offsets.items()})


class TopicReader:
    """Reads one topic in a consumer group, a bounded batch at a time, from where the group
    committed: never the whole topic from its start."""

    def __init__(self, kafka: AIOKafkaConsumer, topic: str) -> None:
        self._kafka = kafka
        self._topic = topic
        self._started = False

    async def fetch(self, limit: int, *, wait_ms: int) -> list[KafkaRecord]:
        if not self._started:
            await self._kafka.start()
            self._kafka.subscribe([self._topic])
            self._started = True
        batch: dict[TopicPartition, list[ConsumerRecord[bytes, bytes]]] = await self._kafka.getmany(
            timeout_ms=wait_ms, max_records=limit
        )
        return [_record(r) for rs in batch.values() for r in rs]

    async def commit_past(self, records: Sequence[KafkaRecord]) -> None:
        """Commit past each record's partition's last record given."""
        offsets: dict[TopicPartition, int] = {}
        for record in records:
            tp = TopicPartition(record.topic, record.partition)
            offsets[tp] = max(offsets.get(tp, 0), record.offset + 1)
        if offsets:
            await self._kafka.commit(offsets)

    def rewind_to(self, records: Sequence[KafkaRecord]) -> None:
        """Fetch these records again: back to each partition's first record given."""
        first: dict[TopicPartition, int] = {}
        for record in records:
            tp = TopicPartition(record.topic, record.partition)
            first[tp] = min(first.get(tp, record.offset), record.offset)
        for tp, offset in first.items():
            if tp in self._kafka.assignment():
                self._kafka.seek(tp, offset)

    async def stop(self) -> None:
        if self._started:
            self._started = False
            await self._kafka.stop()


class _Rebalance(ConsumerRebalanceListener):  # type: ignore[misc]
    def __init__(self, revoked: _Revoked, assigned: _Assigned) -> None:
        self._revoked = revoked
        self._assigned = assigned

    async def on_partitions_revoked(self, revoked: Iterable[TopicPartition]) -> None:
        await self._revoked({_partition(tp) for tp in revoked})

    async def on_partitions_assigned(self, assigned: Iterable[TopicPartition]) -> None:
        self._assigned({_partition(tp) for tp in assigned})
