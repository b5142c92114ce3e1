"""The Kafka :class:`~shop.messaging.transports.base.Transport` on FastStream's
:class:`~faststream.kafka.KafkaBroker`: publishes through the producer the broker owns,
creates the topics every contract and every consumer needs, and makes a
:class:`KafkaConsumer` (a FastStream subscriber) per consumer."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from aiokafka.structs import RecordMetadata
from faststream.kafka import KafkaBroker

from shop.contracts import ALL_CONTRACTS
from shop.messaging.errors import MessageTooLarge, PublishError
from shop.messaging.message import OutgoingMessage
from shop.messaging.naming import Naming
from shop.messaging.pipeline import Pipeline
from shop.messaging.settings import DEFAULT_DEAD_LETTER_RETENTION, KafkaSettings
from shop.messaging.transports.base import ConsumerOptions, Features
from shop.messaging.transports.kafka.client import KafkaClient, KafkaError
from shop.messaging.transports.kafka.consumer import KafkaConsumer
from shop.messaging.transports.kafka.deadletters import KafkaDeadLetterCourier
from shop.messaging.transports.kafka.topology import topics_of


class KafkaTransport:
    """Publishes through the one producer of its broker, which batches records per
    partition; creates topics itself, with the configured partitions, rather than leave
    them to a broker's auto-creation and its defaults."""

    name = "kafka"
    features = Features(largest_body=None, key_order=True)
    """A key is one partition, consumed in order."""

    def __init__(
        self,
        settings: KafkaSettings,
        naming: Naming | None = None,
        *,
        dead_letter_retention_seconds: int = DEFAULT_DEAD_LETTER_RETENTION,
    ) -> None:
        """``dead_letter_retention_seconds``: the ``retention.ms`` of each dead-letter
        topic it creates (how long a letter waits there for the worker to collect it)."""
        self.settings = settings
        self.naming = naming or Naming()
        self.dead_letter_retention_seconds = dead_letter_retention_seconds
        self._client = KafkaClient(settings)
        self._courier = KafkaDeadLetterCourier(self._client, self.naming)
        # Concurrent publish calls hand their records over one call after the other, so
        # that each key keeps the order of the calls (the relay overlaps two batches).
        self._handing_over = asyncio.Lock()

    async def start(self) -> None:
        if self._client.started:
            return
        try:
            await self._client.start()
            await self._client.create_topics(self.naming.topic(c) for c in ALL_CONTRACTS)
        except BaseException:
            await self.close()
            raise

    async def close(self) -> None:
        await self._courier.close()
        await self._client.close()

    @property
    def broker(self) -> KafkaBroker:
        """The FastStream broker underneath, once started: its subscribers are this
        transport's consumers (for middlewares or inspection; publish through the
        transport, which keeps the order of each key)."""
        return self._client.broker

    async def declare(self, pipeline: Pipeline) -> None:
        await self._client.create_topics(topics_of(self.naming, pipeline.router))
        await self._client.create_topic_kept_for(
            self.naming.dead_letters(pipeline.group), self.dead_letter_retention_seconds * 1000
        )

    async def publish(self, messages: Sequence[OutgoingMessage]) -> None:
        enqueued: list[tuple[int, asyncio.Future[RecordMetadata]]] = []
        errors: dict[int, BaseException] = {}
        async with self._handing_over:
            for index, message in enumerate(messages):
                try:
                    future = await self._client.enqueue(
                        message.topic, message.body, message.headers, message.key
                    )
                except (KafkaError, MessageTooLarge) as error:
                    # The rest were not even handed over: report them all, in order.
                    errors.update(dict.fromkeys(range(index, len(messages)), error))
                    break
                enqueued.append((index, future))
        errors.update(await _failed_receipts(enqueued))
        if errors:
            raise PublishError(set(errors), errors[min(errors)])

    def consumer(self, pipeline: Pipeline, options: ConsumerOptions) -> KafkaConsumer:
        return KafkaConsumer(self._client, self.naming, pipeline, options)

    @property
    def dead_letter_courier(self) -> KafkaDeadLetterCourier:
        return self._courier


async def _failed_receipts(
    receipts: Sequence[tuple[int, asyncio.Future[RecordMetadata]]],
) -> dict[int, BaseException]:
    """Wait for every receipt; each failure under its message's index. One after the
    other rather than gathered: most are settled by the time the first one is, and a
    gather's bookkeeping costs about a microsecond a record (a fifth of what publishing one
    through FastStream costs).
    Cancelled, it cancels those not settled yet, as a gather would."""
    failed: dict[int, BaseException] = {}
    try:
        for index, receipt in receipts:
            try:
                await receipt
            except Exception as error:  # whatever failed it, reported with its index
                failed[index] = error
    except BaseException:
        for _, receipt in receipts:
            receipt.cancel()
        raise
    return failed
