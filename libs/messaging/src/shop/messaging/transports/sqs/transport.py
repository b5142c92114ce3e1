"""The SNS/SQS :class:`~shop.messaging.transports.base.Transport`: publishes to the SNS
topic of each message type, declares each consumer's queues and subscriptions, and makes
an :class:`SqsConsumer` per consumer."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence

from shop.contracts import ALL_CONTRACTS
from shop.messaging.errors import MessagingError, PublishError
from shop.messaging.message import OutgoingMessage
from shop.messaging.naming import Naming
from shop.messaging.pipeline import Pipeline
from shop.messaging.settings import DEFAULT_DEAD_LETTER_RETENTION, SqsSettings
from shop.messaging.transports.base import ConsumerOptions, Features
from shop.messaging.transports.sqs.batching import BATCH_BYTES, topic_batches, waves, wire_size
from shop.messaging.transports.sqs.client import SqsClient
from shop.messaging.transports.sqs.consumer import SqsConsumer
from shop.messaging.transports.sqs.deadletters import SqsDeadLetterCourier
from shop.messaging.transports.sqs.topology import (
    SqsQueues,
    dead_letter_queue_attributes,
    queue_attributes,
)
from shop.messaging.transports.sqs.wire import MessageAttributes, message_attributes


class SqsTransport:
    """Keeps the ARN of each topic and the queues of each consumer once looked up: SNS
    and SQS address them by ARN and URL, which only a call can tell."""

    name = "sqs"
    features = Features(largest_body=BATCH_BYTES, key_order=False)
    """SNS refuses a message over 256 KiB; standard queues promise no order."""

    def __init__(
        self,
        settings: SqsSettings,
        naming: Naming | None = None,
        *,
        dead_letter_retention_seconds: int = DEFAULT_DEAD_LETTER_RETENTION,
    ) -> None:
        """``dead_letter_retention_seconds``: the ``MessageRetentionPeriod`` of each
        dead-letter queue (how long a letter waits there for the worker to collect it)."""
        self.settings = settings
        self.naming = naming or Naming()
        self.dead_letter_retention_seconds = dead_letter_retention_seconds
        self._client = SqsClient(settings)
        self._topic_arns: dict[str, str] = {}
        self._queues: dict[str, SqsQueues] = {}
        self._courier = SqsDeadLetterCourier(self._client, self.queues_of)
        # Concurrent publish calls go one after the other, so that each key keeps the
        # order of the calls (the relay overlaps two batches).
        self._publishing = asyncio.Lock()

    async def start(self) -> None:
        if self._client.started:
            return
        await self._client.start()
        try:
            await self._prepare_topics()
        except BaseException:
            await self._client.close()
            raise

    async def close(self) -> None:
        await self._client.close()

    # -- topics -----------------------------------------------------------------------

    async def _prepare_topics(self) -> None:
        names = [self.naming.topic(contract) for contract in ALL_CONTRACTS]
        if self.settings.auto_create:
            arns = await asyncio.gather(*(self._client.create_topic(name) for name in names))
            self._topic_arns.update(zip(names, arns, strict=True))
            return
        existing = await self._client.topics()
        missing = sorted(set(names) - existing.keys())
        if missing:
            raise MessagingError(
                f"SNS topics missing: {', '.join(missing)}; create them or turn auto_create on"
            )
        self._topic_arns.update(existing)

    async def topic_arn(self, name: str) -> str:
        """ARN of the topic called ``name``, created (auto_create) or looked up once."""
        arn = self._topic_arns.get(name)
        if arn is not None:
            return arn
        if self.settings.auto_create:
            arn = await self._client.create_topic(name)
        else:
            self._topic_arns.update(await self._client.topics())
            if name not in self._topic_arns:
                raise MessagingError(f"SNS topic {name!r} does not exist and auto_create is off")
            arn = self._topic_arns[name]
        self._topic_arns[name] = arn
        return arn

    # -- publishing -------------------------------------------------------------------

    async def publish(self, messages: Sequence[OutgoingMessage]) -> None:
        async with self._publishing:
            await self._publish_in_order(messages)

    async def _publish_in_order(self, messages: Sequence[OutgoingMessage]) -> None:
        """Publish ``messages`` in waves: a key's n-th message goes in the n-th wave, once
        its earlier ones are out, and a wave's messages (of distinct keys, in no order
        among themselves) go in full batches of one topic, several calls at once."""
        entries, errors = _entries(messages)
        failed: set[int] = set(errors)
        cause: BaseException | None = next(iter(errors.values()), None)
        blocked_keys = {messages[index].key for index in errors}
        topics = {index: messages[index].topic for index in entries}
        sizes = {index: wire_size(*entry) for index, entry in entries.items()}
        calls = asyncio.Semaphore(self.settings.publish_concurrency)

        async def publish_batch(batch: list[int]) -> dict[int, BaseException]:
            async with calls:
                return await self._publish_batch(topics[batch[0]], entries, batch)

        for wave in waves([message.key for message in messages]):
            # Once a message of a key failed, its later ones wait too: publishing them now
            # would put them ahead of it when the outbox sends it again.
            held = {index for index in wave if messages[index].key in blocked_keys}
            sendable = [index for index in wave if index in entries and index not in held]
            # A task group: a call that fails unexpectedly cancels its siblings and waits
            # for them, so none goes on publishing after this returns.
            async with asyncio.TaskGroup() as group:
                calling = [
                    group.create_task(publish_batch(batch))
                    for batch in topic_batches(sendable, topics, sizes)
                ]
            wave_errors = {i: e for call in calling for i, e in call.result().items()}
            failed |= held | wave_errors.keys()
            blocked_keys.update(messages[index].key for index in wave_errors)
            cause = cause or next(iter(wave_errors.values()), None)
        if failed:
            assert cause is not None  # a key is held back only after a failure
            raise PublishError(failed, cause)

    async def _publish_batch(
        self,
        topic: str,
        entries: Mapping[int, tuple[str, MessageAttributes]],
        batch: Sequence[int],
    ) -> dict[int, BaseException]:
        """Publish one batch (one topic); the errors of the messages that failed."""
        chosen = {index: entries[index] for index in batch}
        try:
            arn = await self.topic_arn(topic)
            refused = await self._client.publish_batch(arn, chosen)
        except Exception as error:  # reported to the caller as PublishError
            return dict.fromkeys(chosen, error)
        return {
            index: MessagingError(f"SNS refused message: {reason}")
            for index, reason in refused.items()
        }

    # -- queues -----------------------------------------------------------------------

    async def declare(self, pipeline: Pipeline) -> None:
        group = pipeline.group
        if not self.settings.auto_create:
            await self.queues_of(group)  # fails, naming the queue, when it is missing
            return
        dead_letters_url = await self._client.create_queue(self.naming.dead_letters(group))
        url = await self._client.create_queue(self.naming.queue(group))
        queues = await self._queues_at(group, url, dead_letters_url)
        topic_arns = sorted(
            {await self.topic_arn(self.naming.topic(s.contract)) for s in pipeline.router}
        )
        await self._client.set_attributes(
            queues.url,
            queue_attributes(
                queues,
                topic_arns,
                visibility_timeout=self.settings.visibility_timeout,
                max_attempts=pipeline.router.max_attempts,
            ),
        )
        await self._client.set_attributes(
            queues.dead_letters_url,
            dead_letter_queue_attributes(
                queues, retention_seconds=self.dead_letter_retention_seconds
            ),
        )
        for topic_arn in topic_arns:
            await self._client.subscribe(topic_arn, queues.arn)
        self._queues[group] = queues

    async def queues_of(self, group: str) -> SqsQueues:
        """The queues of ``group``, looked up once."""
        queues = self._queues.get(group)
        if queues is None:
            url = await self._client.queue_url(self.naming.queue(group))
            dead_letters_url = await self._client.queue_url(self.naming.dead_letters(group))
            queues = await self._queues_at(group, url, dead_letters_url)
            self._queues[group] = queues
        return queues

    async def _queues_at(self, group: str, url: str, dead_letters_url: str) -> SqsQueues:
        return SqsQueues(
            name=self.naming.queue(group),
            url=url,
            arn=await self._client.queue_arn(url),
            dead_letters_url=dead_letters_url,
            dead_letters_arn=await self._client.queue_arn(dead_letters_url),
        )

    # -- consuming --------------------------------------------------------------------

    def consumer(self, pipeline: Pipeline, options: ConsumerOptions) -> SqsConsumer:
        return SqsConsumer(self._client, self.settings, self.queues_of, pipeline, options)

    @property
    def dead_letter_courier(self) -> SqsDeadLetterCourier:
        return self._courier


def _entries(
    messages: Sequence[OutgoingMessage],
) -> tuple[dict[int, tuple[str, MessageAttributes]], dict[int, BaseException]]:
    """Each message as SNS takes it (its body as text, its attributes), by index; and the
    errors of those it cannot take."""
    entries: dict[int, tuple[str, MessageAttributes]] = {}
    errors: dict[int, BaseException] = {}
    for index, message in enumerate(messages):
        try:
            body = message.body.decode("utf-8")
        except UnicodeDecodeError as error:  # SNS carries text only
            errors[index] = error
            continue
        entries[index] = (body, message_attributes(message.headers, message.key))
    return entries, errors
