"""SNS and SQS: a topic per message type; each consuming service has its own queue,
subscribed with raw delivery to the topics of the types it handles, and a dead-letter queue.

A retry is ``ChangeMessageVisibility``: the failed message stays in its queue, hidden for
the retry delay, and its ``ApproximateReceiveCount`` is the attempt number. The queue's
``RedrivePolicy`` (``maxReceiveCount`` = the most attempts any subscriber allows) is only a
safety net for messages that crash their worker every time; the pipeline dead-letters
explicitly on its last attempt, with the reason.
"""

from __future__ import annotations

import asyncio
import builtins
import contextlib
import functools
import json
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Final, TypeVar

import structlog
from aiobotocore.config import AioConfig
from aiobotocore.session import AioSession
from botocore.exceptions import ClientError

from shop.contracts import ALL_CONTRACTS
from shop.messaging import headers as h
from shop.messaging.deadletters import StoredDeadLetter, dead_letter_headers, read_dead_letter
from shop.messaging.dispatch import KeyedDispatcher
from shop.messaging.errors import MessagingError, PublishError
from shop.messaging.message import Delivery, OutgoingMessage
from shop.messaging.naming import Naming
from shop.messaging.outcome import Ack, DeadLetter, Outcome, Retry
from shop.messaging.pipeline import Pipeline
from shop.messaging.settings import SqsSettings
from shop.messaging.transports.base import ConsumerLifecycle, ConsumerOptions

log = structlog.get_logger("shop.messaging")

HEADERS_ATTRIBUTE: Final = "shop-headers"
"""Every header of a message, as one JSON object in one String message attribute. SQS
accepts at most 10 attributes per message, and a dead letter carries the producer's
headers plus seven dead-letter keys, so headers cannot be one attribute each."""
KEY_ATTRIBUTE: Final = "shop-key"
"""The message's key (its aggregate id), beside the headers, which hold only what the
producer wrote: a consumer handles one key at a time, redriven messages included."""
TYPE_ATTRIBUTE: Final = h.MESSAGE_TYPE
"""The message type once more as an attribute of its own, for SNS filter policies."""

MOVED_BY_SQS: Final = "MaxReceiveCountExceeded"
"""Error type of a dead letter that SQS moved itself (its worker never settled it)."""

_Client = Any
"""aiobotocore builds its clients at run time; they carry no types."""
_T = TypeVar("_T")

_BATCH_LIMIT: Final = 10
"""Entries per PublishBatch, ReceiveMessage and *Batch call."""
_MAX_VISIBILITY: Final = 43_200
_DEAD_LETTER_RETENTION: Final = 14 * 24 * 3600
"""The longest SQS keeps a message: dead letters wait for a person."""
_SCAN_VISIBILITY: Final = 120
"""How long a dead-letter scan hides the messages it has seen, so that it sees each once."""
_SCAN_WAIT: Final = 1
"""A long poll asks every SQS server, so its empty answer means no message is left; a
short poll asks only some of them."""
_RECEIVE_BACKOFF: Final = 1.0
_MOVE_TASK_POLL: Final = 0.5
_CONNECTIONS: Final = 50
"""Each long poll holds a connection for its whole wait; settling must not queue behind."""
_SYSTEM_ATTRIBUTES: Final = (
    "ApproximateReceiveCount",
    "ApproximateFirstReceiveTimestamp",
    "SentTimestamp",
)
_MOVE_TASK_UNSUPPORTED: Final = frozenset(
    {
        "UnsupportedOperation",
        "AWS.SimpleQueueService.UnsupportedOperation",
        "InvalidAction",
        "NotImplemented",
    }
)
_NO_SUCH_QUEUE: Final = frozenset({"AWS.SimpleQueueService.NonExistentQueue", "QueueDoesNotExist"})


@dataclass(frozen=True, slots=True)
class SqsMessage:
    """One received SQS message, read into plain values."""

    message_id: str
    receipt_handle: str
    body: str
    headers: dict[str, str]
    key: str | None
    receive_count: int
    first_received_at: datetime | None
    sent_at: datetime | None


@dataclass(frozen=True, slots=True)
class SqsQueues:
    """The queues of one consuming service."""

    name: str
    url: str
    arn: str
    dead_letters_url: str
    dead_letters_arn: str


def _chunks(items: Sequence[_T], size: int = _BATCH_LIMIT) -> Iterator[Sequence[_T]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def _epoch_millis(value: object) -> datetime | None:
    if value is None:
        return None
    return datetime.fromtimestamp(int(str(value)) / 1000, UTC)


def _string_attribute(attributes: Mapping[str, Any], name: str) -> str | None:
    value = attributes.get(name, {}).get("StringValue")
    return None if value is None else str(value)


def _read_headers(attributes: Mapping[str, Any], message_id: str) -> dict[str, str]:
    text = _string_attribute(attributes, HEADERS_ATTRIBUTE)
    if text is None:
        return {}
    try:
        decoded = json.loads(text)
    except ValueError:
        decoded = None
    if not isinstance(decoded, dict):
        # The body still decides what the message is; only its headers are lost.
        log.warning("unreadable headers attribute ignored", message_id=message_id)
        return {}
    return {str(name): str(value) for name, value in decoded.items()}


def _read_message(raw: Mapping[str, Any]) -> SqsMessage:
    message_id = str(raw["MessageId"])
    system = raw.get("Attributes", {})
    attributes = raw.get("MessageAttributes", {})
    return SqsMessage(
        message_id=message_id,
        receipt_handle=str(raw["ReceiptHandle"]),
        body=str(raw.get("Body", "")),
        headers=_read_headers(attributes, message_id),
        key=_string_attribute(attributes, KEY_ATTRIBUTE),
        receive_count=int(str(system.get("ApproximateReceiveCount", "1"))),
        first_received_at=_epoch_millis(system.get("ApproximateFirstReceiveTimestamp")),
        sent_at=_epoch_millis(system.get("SentTimestamp")),
    )


def _string(value: str) -> dict[str, str]:
    return {"DataType": "String", "StringValue": value}


def message_attributes(headers: Mapping[str, str], key: str | None) -> dict[str, dict[str, str]]:
    """SNS and SQS message attributes (the same shape in both) carrying headers and key."""
    attributes = {HEADERS_ATTRIBUTE: _string(json.dumps(dict(headers), sort_keys=True))}
    if key:  # attribute values may not be empty
        attributes[KEY_ATTRIBUTE] = _string(key)
    message_type = headers.get(h.MESSAGE_TYPE)
    if message_type:
        attributes[TYPE_ATTRIBUTE] = _string(message_type)
    return attributes


def _error_code(error: ClientError) -> str:
    return str(error.response.get("Error", {}).get("Code", ""))


class _Sqs:
    """The SQS calls this module makes, with typed arguments and results."""

    def __init__(self, client: _Client) -> None:
        self.client = client

    async def create_queue(self, name: str) -> str:
        # Without attributes CreateQueue is idempotent; attributes are set separately so
        # that a changed setting (visibility, max attempts) reaches an existing queue.
        response = await self.client.create_queue(QueueName=name)
        return str(response["QueueUrl"])

    async def queue_url(self, name: str) -> str:
        try:
            response = await self.client.get_queue_url(QueueName=name)
        except ClientError as error:
            if _error_code(error) in _NO_SUCH_QUEUE:
                raise MessagingError(
                    f"SQS queue {name!r} does not exist: declare its consumer with "
                    "auto_create on, or create it"
                ) from error
            raise
        return str(response["QueueUrl"])

    async def attributes(self, url: str, names: Sequence[str]) -> dict[str, str]:
        response = await self.client.get_queue_attributes(QueueUrl=url, AttributeNames=list(names))
        return {str(name): str(value) for name, value in response.get("Attributes", {}).items()}

    async def queue_arn(self, url: str) -> str:
        return (await self.attributes(url, ["QueueArn"]))["QueueArn"]

    async def set_attributes(self, url: str, attributes: Mapping[str, str]) -> None:
        await self.client.set_queue_attributes(QueueUrl=url, Attributes=dict(attributes))

    async def max_receive_count(self, url: str) -> int | None:
        policy = (await self.attributes(url, ["RedrivePolicy"])).get("RedrivePolicy")
        return int(json.loads(policy)["maxReceiveCount"]) if policy else None

    async def receive(self, url: str, *, wait: int, visibility: int) -> list[SqsMessage]:
        response = await self.client.receive_message(
            QueueUrl=url,
            MaxNumberOfMessages=_BATCH_LIMIT,
            WaitTimeSeconds=wait,
            VisibilityTimeout=visibility,
            MessageAttributeNames=["All"],
            MessageSystemAttributeNames=list(_SYSTEM_ATTRIBUTES),
        )
        return [_read_message(raw) for raw in response.get("Messages", [])]

    async def send(self, url: str, body: str, headers: Mapping[str, str], key: str | None) -> str:
        response = await self.client.send_message(
            QueueUrl=url, MessageBody=body, MessageAttributes=message_attributes(headers, key)
        )
        return str(response["MessageId"])

    async def delete(self, url: str, message: SqsMessage) -> None:
        await self.client.delete_message(QueueUrl=url, ReceiptHandle=message.receipt_handle)

    async def change_visibility(self, url: str, message: SqsMessage, seconds: int) -> None:
        await self.client.change_message_visibility(
            QueueUrl=url, ReceiptHandle=message.receipt_handle, VisibilityTimeout=seconds
        )

    async def delete_many(self, url: str, messages: Sequence[SqsMessage]) -> list[str]:
        """Delete ``messages``; the ids of those SQS refused to delete."""
        refused: list[str] = []
        for chunk in _chunks(messages):
            response = await self.client.delete_message_batch(
                QueueUrl=url,
                Entries=[
                    {"Id": str(index), "ReceiptHandle": message.receipt_handle}
                    for index, message in enumerate(chunk)
                ],
            )
            refused += [chunk[int(f["Id"])].message_id for f in response.get("Failed", [])]
        return refused

    async def release(self, url: str, messages: Sequence[SqsMessage]) -> None:
        """Make ``messages`` visible again at once (visibility 0)."""
        for chunk in _chunks(messages):
            response = await self.client.change_message_visibility_batch(
                QueueUrl=url,
                Entries=[
                    {"Id": str(index), "ReceiptHandle": m.receipt_handle, "VisibilityTimeout": 0}
                    for index, m in enumerate(chunk)
                ],
            )
            for failure in response.get("Failed", []):
                # Not fatal: the message comes back anyway when its visibility timeout ends.
                log.warning(
                    "could not make a message visible again",
                    queue_url=url,
                    message_id=chunk[int(failure["Id"])].message_id,
                    error=failure.get("Message", failure.get("Code")),
                )


def _publish_batches(messages: Sequence[OutgoingMessage]) -> Iterator[list[int]]:
    """Indexes of ``messages`` in batches of one topic and at most 10, in their order: a
    batch ends where the topic changes, so that nothing is published out of turn."""
    batch: list[int] = []
    for index, message in enumerate(messages):
        if batch and (len(batch) == _BATCH_LIMIT or messages[batch[0]].topic != message.topic):
            yield batch
            batch = []
        batch.append(index)
    if batch:
        yield batch


def _topic_name(arn: str) -> str:
    return arn.rsplit(":", 1)[-1]


def _allow_topics(queue_arn: str, topic_arns: Sequence[str]) -> str:
    """Queue policy letting exactly these SNS topics deliver to the queue."""
    return json.dumps(
        {
            "Version": "2012-10-17",
            "Statement": [
                {
                    "Sid": "shop-topics",
                    "Effect": "Allow",
                    "Principal": {"Service": "sns.amazonaws.com"},
                    "Action": "sqs:SendMessage",
                    "Resource": queue_arn,
                    "Condition": {"ArnEquals": {"aws:SourceArn": list(topic_arns)}},
                }
            ],
        }
    )


class SqsTransport:
    name = "sqs"

    def __init__(self, settings: SqsSettings, naming: Naming | None = None) -> None:
        self.settings = settings
        self.naming = naming or Naming()
        self._session = AioSession()
        self._stack: AsyncExitStack | None = None
        self._sns_client: _Client | None = None
        self._sqs_ops: _Sqs | None = None
        self._topic_arns: dict[str, str] = {}
        self._queues: dict[str, SqsQueues] = {}
        self._store = SqsDeadLetterStore(self)
        # Concurrent publish calls go one after the other, so that each key keeps the
        # order of the calls (the relay overlaps two batches).
        self._publishing = asyncio.Lock()

    # -- connection -------------------------------------------------------------------

    def _client_kwargs(self) -> dict[str, str]:
        kwargs = {"region_name": self.settings.region}
        if self.settings.endpoint_url:
            kwargs["endpoint_url"] = self.settings.endpoint_url
        # Without explicit credentials botocore's default chain finds them (role, env, …).
        if self.settings.access_key_id and self.settings.secret_access_key:
            kwargs["aws_access_key_id"] = self.settings.access_key_id
            kwargs["aws_secret_access_key"] = self.settings.secret_access_key
        return kwargs

    def _create_client(self, service: str, config: AioConfig | None = None) -> Any:
        return self._session.create_client(service, config=config, **self._client_kwargs())

    async def start(self) -> None:
        if self._stack is not None:
            return
        stack = AsyncExitStack()
        try:
            self._sns_client = await stack.enter_async_context(self._create_client("sns"))
            sqs_config = AioConfig(max_pool_connections=_CONNECTIONS)
            self._sqs_ops = _Sqs(
                await stack.enter_async_context(self._create_client("sqs", sqs_config))
            )
            await self._prepare_topics()
        except BaseException:
            self._sns_client = self._sqs_ops = None
            await stack.aclose()
            raise
        self._stack = stack

    async def close(self) -> None:
        stack, self._stack = self._stack, None
        self._sns_client = self._sqs_ops = None
        if stack is not None:
            await stack.aclose()

    @property
    def sns(self) -> _Client:
        if self._sns_client is None:
            raise MessagingError("the SQS transport is not started")
        return self._sns_client

    @property
    def sqs(self) -> _Sqs:
        if self._sqs_ops is None:
            raise MessagingError("the SQS transport is not started")
        return self._sqs_ops

    @asynccontextmanager
    async def single_try_sqs(self) -> AsyncIterator[_Client]:
        """An SQS client that does not retry: for a call whose failure has a fallback."""
        config = AioConfig(retries={"total_max_attempts": 1})
        async with self._create_client("sqs", config) as client:
            yield client

    # -- topics -----------------------------------------------------------------------

    async def _prepare_topics(self) -> None:
        names = [self.naming.topic(contract) for contract in ALL_CONTRACTS]
        if self.settings.auto_create:
            arns = await asyncio.gather(*(self._create_topic(name) for name in names))
            self._topic_arns.update(zip(names, arns, strict=True))
            return
        existing = await self._existing_topics()
        missing = sorted(set(names) - existing.keys())
        if missing:
            raise MessagingError(
                f"SNS topics missing: {', '.join(missing)}; create them or turn auto_create on"
            )
        self._topic_arns.update(existing)

    async def _create_topic(self, name: str) -> str:
        response = await self.sns.create_topic(Name=name)  # idempotent
        return str(response["TopicArn"])

    async def _existing_topics(self) -> dict[str, str]:
        topics: dict[str, str] = {}
        arguments: dict[str, str] = {}
        while True:
            response = await self.sns.list_topics(**arguments)
            for topic in response.get("Topics", []):
                arn = str(topic["TopicArn"])
                topics[_topic_name(arn)] = arn
            token = response.get("NextToken")
            if not token:
                return topics
            arguments = {"NextToken": str(token)}

    async def topic_arn(self, name: str) -> str:
        """ARN of the topic called ``name``, created (auto_create) or looked up once."""
        arn = self._topic_arns.get(name)
        if arn is not None:
            return arn
        if self.settings.auto_create:
            arn = await self._create_topic(name)
        else:
            self._topic_arns.update(await self._existing_topics())
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
        failed: set[int] = set()
        cause: BaseException | None = None
        blocked_keys: set[str] = set()
        for batch in _publish_batches(messages):
            # Once a message of a key failed, its later ones wait too: publishing them now
            # would put them ahead of it when the outbox sends it again.
            held = {index for index in batch if messages[index].key in blocked_keys}
            sendable = [index for index in batch if index not in held]
            errors = await self._publish_batch(messages, sendable) if sendable else {}
            failed |= held | errors.keys()
            blocked_keys.update(messages[index].key for index in errors)
            cause = cause or next(iter(errors.values()), None)
        if failed:
            assert cause is not None  # a key is held back only after a failure
            raise PublishError(failed, cause)

    async def _publish_batch(
        self, messages: Sequence[OutgoingMessage], indexes: Sequence[int]
    ) -> dict[int, BaseException]:
        """Publish one batch (one topic); the errors of the messages that failed."""
        errors: dict[int, BaseException] = {}
        entries: list[dict[str, Any]] = []
        for index in indexes:
            message = messages[index]
            try:
                body = message.body.decode("utf-8")
            except UnicodeDecodeError as error:  # SNS carries text only
                errors[index] = error
                continue
            entries.append(
                {
                    "Id": str(index),
                    "Message": body,
                    "MessageAttributes": message_attributes(message.headers, message.key),
                }
            )
        if not entries:
            return errors
        try:
            arn = await self.topic_arn(messages[indexes[0]].topic)
            response = await self.sns.publish_batch(
                TopicArn=arn, PublishBatchRequestEntries=entries
            )
        except Exception as error:  # reported to the caller as PublishError
            errors.update({int(entry["Id"]): error for entry in entries})
            return errors
        for failure in response.get("Failed", []):
            errors[int(failure["Id"])] = MessagingError(
                f"SNS refused message: {failure.get('Code')}: {failure.get('Message')}"
            )
        return errors

    # -- queues -----------------------------------------------------------------------

    async def declare(self, pipeline: Pipeline) -> None:
        group = pipeline.group
        if not self.settings.auto_create:
            await self.queues_of(group)  # fails, naming the queue, when it is missing
            return
        dead_letters_url = await self.sqs.create_queue(self.naming.dead_letters(group))
        url = await self.sqs.create_queue(self.naming.queue(group))
        queues = await self._queues_at(group, url, dead_letters_url)
        topic_arns = sorted(
            {await self.topic_arn(self.naming.topic(s.contract)) for s in pipeline.router}
        )
        await self.sqs.set_attributes(
            queues.url, self._queue_attributes(queues, topic_arns, pipeline.router.max_attempts)
        )
        await self.sqs.set_attributes(
            queues.dead_letters_url,
            {
                "MessageRetentionPeriod": str(_DEAD_LETTER_RETENTION),
                # Only this group's queue dead-letters here.
                "RedriveAllowPolicy": json.dumps(
                    {"redrivePermission": "byQueue", "sourceQueueArns": [queues.arn]}
                ),
            },
        )
        for topic_arn in topic_arns:
            await self._subscribe(topic_arn, queues.arn)
        self._queues[group] = queues

    def _queue_attributes(
        self, queues: SqsQueues, topic_arns: Sequence[str], max_attempts: int
    ) -> dict[str, str]:
        attributes = {
            "VisibilityTimeout": str(self.settings.visibility_timeout),
            "RedrivePolicy": json.dumps(
                {"deadLetterTargetArn": queues.dead_letters_arn, "maxReceiveCount": max_attempts}
            ),
        }
        if topic_arns:
            attributes["Policy"] = _allow_topics(queues.arn, topic_arns)
        return attributes

    async def _subscribe(self, topic_arn: str, queue_arn: str) -> str:
        # Idempotent: SNS answers an existing subscription with its ARN.
        response = await self.sns.subscribe(
            TopicArn=topic_arn,
            Protocol="sqs",
            Endpoint=queue_arn,
            Attributes={"RawMessageDelivery": "true"},
            ReturnSubscriptionArn=True,
        )
        return str(response["SubscriptionArn"])

    async def _queues_at(self, group: str, url: str, dead_letters_url: str) -> SqsQueues:
        return SqsQueues(
            name=self.naming.queue(group),
            url=url,
            arn=await self.sqs.queue_arn(url),
            dead_letters_url=dead_letters_url,
            dead_letters_arn=await self.sqs.queue_arn(dead_letters_url),
        )

    async def queues_of(self, group: str) -> SqsQueues:
        """The queues of ``group``, looked up once."""
        queues = self._queues.get(group)
        if queues is None:
            url = await self.sqs.queue_url(self.naming.queue(group))
            dead_letters_url = await self.sqs.queue_url(self.naming.dead_letters(group))
            queues = await self._queues_at(group, url, dead_letters_url)
            self._queues[group] = queues
        return queues

    def consumer(self, pipeline: Pipeline, options: ConsumerOptions) -> SqsConsumer:
        return SqsConsumer(self, pipeline, options)

    @property
    def dead_letter_store(self) -> SqsDeadLetterStore:
        return self._store


# -- consuming ------------------------------------------------------------------------


@dataclass(eq=False, slots=True)
class _Held:
    """A received message this consumer has not settled yet, kept hidden meanwhile."""

    message: SqsMessage
    delivery: Delivery
    keeper: asyncio.Task[None]


def _retry_visibility(delay: float) -> int:
    return min(max(round(delay), 0), _MAX_VISIBILITY)


def delivery_of(message: SqsMessage, queue_name: str) -> Delivery:
    """What the pipeline sees of a received message.

    A message moved back from the dead-letter queue as it was (StartMessageMoveTask) still
    carries its dead-letter keys: they are dropped, and its source is kept.
    """
    headers = {k: v for k, v in message.headers.items() if k not in h.DEAD_LETTER_KEYS}
    source = (
        message.headers.get(h.ORIGIN) or message.headers.get(h.DEAD_LETTER_SOURCE) or queue_name
    )
    attempt = max(message.receive_count, 1)
    return Delivery(
        body=message.body.encode("utf-8"),
        headers=headers,
        source=source,
        attempt=attempt,
        first_failure_at=message.first_received_at if attempt > 1 else None,
        key=message.key or message.message_id,
    )


class SqsConsumer(ConsumerLifecycle):
    def __init__(
        self, transport: SqsTransport, pipeline: Pipeline, options: ConsumerOptions
    ) -> None:
        super().__init__()
        self._transport = transport
        self._settings = transport.settings
        self._pipeline = pipeline
        self._group = pipeline.group
        self._options = options
        self._held: set[_Held] = set()
        self._queues: SqsQueues | None = None

    async def run(self) -> None:
        queues = self._queues = await self._transport.queues_of(self._group)
        dispatcher = KeyedDispatcher(self._options.max_in_flight)
        self._running = True
        try:
            async with asyncio.TaskGroup() as loops:
                for _ in range(self._settings.receive_concurrency):
                    loops.create_task(self._receive_loop(queues, dispatcher))
        finally:
            self._running = False
            await dispatcher.drain(self._options.drain_timeout)
            # What is still held was not settled: it need not wait out its timeout.
            await self._let_go(queues, list(self._held))

    # -- receiving --------------------------------------------------------------------

    async def _receive_loop(self, queues: SqsQueues, dispatcher: KeyedDispatcher) -> None:
        # A long poll in progress when stop() comes is let return; no new one starts.
        while not self._stopping.is_set():
            try:
                batch = await self._transport.sqs.receive(
                    queues.url,
                    wait=self._settings.wait_time_seconds,
                    visibility=self._settings.visibility_timeout,
                )
            except Exception:
                log.exception("receiving from SQS failed; trying again", queue=queues.name)
                await self._pause(_RECEIVE_BACKOFF)
                continue
            held = [self._hold(queues, message) for message in batch]
            await self._hand_over(queues, held, dispatcher)

    async def _pause(self, seconds: float) -> None:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._stopping.wait(), seconds)

    def _hold(self, queues: SqsQueues, message: SqsMessage) -> _Held:
        held = _Held(
            message=message,
            delivery=delivery_of(message, queues.name),
            keeper=asyncio.create_task(self._keep_hidden(queues, message)),
        )
        self._held.add(held)
        return held

    async def _hand_over(
        self, queues: SqsQueues, batch: list[_Held], dispatcher: KeyedDispatcher
    ) -> None:
        for index, held in enumerate(batch):
            if self._stopping.is_set() or not await self._submit(queues, held, dispatcher):
                # Received but not started: back to the queue at once, for another worker.
                await self._let_go(queues, batch[index:])
                return

    async def _submit(self, queues: SqsQueues, held: _Held, dispatcher: KeyedDispatcher) -> bool:
        """Give ``held`` to the dispatcher (which waits while it is full); False when
        stop() came first."""
        key = (queues.name, held.delivery.key)
        submitting = asyncio.create_task(
            dispatcher.submit(key, functools.partial(self._handle, held))
        )
        stopping = asyncio.create_task(self._stopping.wait())
        try:
            await asyncio.wait({submitting, stopping}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            stopping.cancel()
            if not submitting.done():
                submitting.cancel()
        await asyncio.wait({submitting})
        return not submitting.cancelled()

    async def _keep_hidden(self, queues: SqsQueues, message: SqsMessage) -> None:
        """Push the visibility timeout forward while the message waits or is handled, so
        that SQS does not hand it to another worker meanwhile."""
        timeout = self._settings.visibility_timeout
        while True:
            await asyncio.sleep(timeout / 2)
            try:
                await self._transport.sqs.change_visibility(queues.url, message, timeout)
            except Exception:
                log.warning(
                    "could not extend visibility; the message may be handled twice",
                    queue=queues.name,
                    message_id=message.message_id,
                    exc_info=True,
                )

    async def _stop_keeping(self, held: _Held) -> None:
        self._held.discard(held)
        held.keeper.cancel()
        # Wait for it, so that a late extension cannot undo the visibility set next.
        await asyncio.wait({held.keeper})

    async def _let_go(self, queues: SqsQueues, batch: Sequence[_Held]) -> None:
        """Make unsettled messages visible again at once, for another worker."""
        for held in batch:
            await self._stop_keeping(held)
        try:
            await self._transport.sqs.release(queues.url, [held.message for held in batch])
        except Exception:
            log.exception(
                "could not release unsettled messages; they return after their timeout",
                queue=queues.name,
            )

    # -- handling ---------------------------------------------------------------------

    async def _handle(self, held: _Held) -> None:
        # Cancellation (drain timeout) leaves the message held: it is released afterwards.
        outcome = await self._pipeline.process(held.delivery)
        await self._stop_keeping(held)
        try:
            await self._settle(held, outcome)
        except Exception:
            # Not deleted, so SQS delivers it again when its visibility timeout ends.
            log.exception(
                "could not settle a message; it will be delivered again",
                group=self._group,
                message_id=held.message.message_id,
                outcome=type(outcome).__name__,
            )

    async def _settle(self, held: _Held, outcome: Outcome) -> None:
        assert self._queues is not None  # set before anything is received
        sqs, queues, message = self._transport.sqs, self._queues, held.message
        if isinstance(outcome, Ack):
            await sqs.delete(queues.url, message)
        elif isinstance(outcome, Retry):
            await sqs.change_visibility(queues.url, message, _retry_visibility(outcome.delay))
        else:
            assert isinstance(outcome, DeadLetter)
            stored = dead_letter_headers(self._group, held.delivery, outcome)
            # Kept first, deleted after: a crash in between makes a duplicate, never a loss.
            await sqs.send(queues.dead_letters_url, message.body, stored, message.key)
            await sqs.delete(queues.url, message)


# -- dead letters ---------------------------------------------------------------------


class SqsDeadLetterStore:
    """Dead letters are the messages of each group's dead-letter queue.

    SQS cannot browse a queue: listing receives every message (hiding it for the scan)
    and then makes them all visible again. Two scans at once hide messages from each other.
    """

    def __init__(self, transport: SqsTransport) -> None:
        self._transport = transport

    async def list(self, group: str) -> list[StoredDeadLetter]:
        sqs = self._transport.sqs
        queues = await self._transport.queues_of(group)
        messages = await self._scan(queues.dead_letters_url)
        try:
            moved_by_sqs = any(h.DEAD_LETTER_ERROR_TYPE not in m.headers for m in messages)
            max_receive_count = await sqs.max_receive_count(queues.url) if moved_by_sqs else None
        finally:
            await sqs.release(queues.dead_letters_url, messages)
        return [self._letter(group, queues, m, max_receive_count) for m in messages]

    async def redrive(self, group: str, letter: StoredDeadLetter) -> None:
        queues = await self._transport.queues_of(group)
        chosen = await self._take(queues, {letter.id})
        if not chosen:
            raise KeyError(
                f"{group} has no dead letter {letter.id!r} (redriven or purged already, "
                "or hidden by another scan)"
            )
        await self._move_back(queues, chosen)

    async def purge(self, group: str, letters: Sequence[StoredDeadLetter]) -> None:
        if not letters:
            return
        queues = await self._transport.queues_of(group)
        doomed = await self._take(queues, {letter.id for letter in letters})
        refused = await self._transport.sqs.delete_many(queues.dead_letters_url, doomed)
        if refused:
            raise MessagingError(f"SQS did not delete dead letters {refused} of {group}")

    async def redrive_all(self, group: str, *, per_second: float) -> int:
        """Move every dead letter of ``group`` back to its queue, at most ``per_second`` a
        second; how many moved.

        Uses StartMessageMoveTask where the endpoint has it (the messages move unchanged:
        the consumer drops their dead-letter keys), else moves them one by one.
        """
        if per_second <= 0:
            raise ValueError("per_second must be positive")
        queues = await self._transport.queues_of(group)
        moved = await self._move_with_task(queues, per_second)
        if moved is not None:
            return moved
        scanned = await self._scan(queues.dead_letters_url)
        return await self._move_back(queues, scanned, per_second=per_second)

    # -- scanning ---------------------------------------------------------------------

    async def _scan(self, url: str, wanted: set[str] | None = None) -> builtins.list[SqsMessage]:
        """Receive the queue's messages (hidden meanwhile), oldest first: all of them, or
        until every id in ``wanted`` is found. The caller settles or releases each."""
        sqs = self._transport.sqs
        found: dict[str, SqsMessage] = {}
        try:
            while wanted is None or not wanted <= found.keys():
                batch = await sqs.receive(url, wait=_SCAN_WAIT, visibility=_SCAN_VISIBILITY)
                if not batch:
                    break
                # A message received twice: its newest receipt handle is the valid one.
                found.update((message.message_id, message) for message in batch)
        except BaseException:
            await sqs.release(url, list(found.values()))
            raise
        oldest = datetime.min.replace(tzinfo=UTC)
        return sorted(found.values(), key=lambda m: (m.sent_at or oldest, m.message_id))

    async def _take(self, queues: SqsQueues, ids: set[str]) -> builtins.list[SqsMessage]:
        """The messages with these ids, hidden; every other one scanned is released."""
        scanned = await self._scan(queues.dead_letters_url, ids)
        await self._transport.sqs.release(
            queues.dead_letters_url, [m for m in scanned if m.message_id not in ids]
        )
        return [m for m in scanned if m.message_id in ids]

    def _letter(
        self, group: str, queues: SqsQueues, message: SqsMessage, max_receive_count: int | None
    ) -> StoredDeadLetter:
        stored = dict(message.headers)
        if h.DEAD_LETTER_ERROR_TYPE not in stored:
            stored.update(_moved_by_sqs(group, queues, message, max_receive_count))
        return read_dead_letter(
            message.message_id, message.body.encode("utf-8"), stored, key=message.key
        )

    # -- moving back ------------------------------------------------------------------

    async def _move_back(
        self,
        queues: SqsQueues,
        messages: Sequence[SqsMessage],
        *,
        per_second: float | None = None,
    ) -> int:
        """Send each message to the group's queue, then delete it here; release the rest
        if one fails."""
        sqs = self._transport.sqs
        moved = 0
        try:
            for message in messages:
                if moved and per_second:
                    await asyncio.sleep(1 / per_second)
                headers = h.original_headers(message.headers)
                headers[h.ORIGIN] = (
                    message.headers.get(h.DEAD_LETTER_SOURCE)
                    or message.headers.get(h.ORIGIN)
                    or queues.name
                )
                await sqs.send(queues.url, message.body, headers, message.key)
                await sqs.delete(queues.dead_letters_url, message)
                moved += 1
        finally:
            await sqs.release(queues.dead_letters_url, messages[moved:])
        return moved

    async def _move_with_task(self, queues: SqsQueues, per_second: float) -> int | None:
        """Move everything with StartMessageMoveTask and wait until done; how many moved,
        or None when the endpoint cannot."""
        async with self._transport.single_try_sqs() as client:
            try:
                response = await client.start_message_move_task(
                    SourceArn=queues.dead_letters_arn,
                    DestinationArn=queues.arn,
                    # SQS accepts 1 to 500 messages a second.
                    MaxNumberOfMessagesPerSecond=max(1, min(500, int(per_second))),
                )
            except ClientError as error:
                status = int(error.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0))
                if _error_code(error) not in _MOVE_TASK_UNSUPPORTED and status < 500:
                    raise
                log.info(
                    "StartMessageMoveTask unavailable; moving dead letters one by one",
                    queue=queues.name,
                    error=_error_code(error) or status,
                )
                return None
        return await self._wait_for_move_task(queues, str(response["TaskHandle"]))

    async def _wait_for_move_task(self, queues: SqsQueues, handle: str) -> int:
        while True:
            response = await self._transport.sqs.client.list_message_move_tasks(
                SourceArn=queues.dead_letters_arn, MaxResults=1
            )
            tasks = response.get("Results", [])
            task: Mapping[str, Any] = tasks[0] if tasks else {}
            status = str(task.get("Status", ""))
            if task.get("TaskHandle", handle) == handle and status == "COMPLETED":
                return int(task.get("ApproximateNumberOfMessagesMoved", 0))
            if status in {"FAILED", "CANCELLED"}:
                raise MessagingError(
                    f"moving the dead letters of {queues.name} back stopped: "
                    f"{task.get('FailureReason', status)}"
                )
            await asyncio.sleep(_MOVE_TASK_POLL)


def _moved_by_sqs(
    group: str, queues: SqsQueues, message: SqsMessage, max_receive_count: int | None
) -> dict[str, str]:
    """Dead-letter keys for a message SQS moved itself (RedrivePolicy): no worker ever
    settled it, so nobody wrote why; what SQS knows stands in."""
    metadata = {
        h.DEAD_LETTER_CONSUMER: group,
        h.DEAD_LETTER_SOURCE: message.headers.get(h.ORIGIN) or queues.name,
        h.DEAD_LETTER_ERROR_TYPE: MOVED_BY_SQS,
        h.DEAD_LETTER_ERROR_MESSAGE: (
            "received more often than the queue's maxReceiveCount without being settled "
            "(its handler crashed or outlasted the visibility timeout each time)"
        ),
        h.DEAD_LETTER_ATTEMPTS: str(max_receive_count or 0),
    }
    if message.sent_at is not None:
        # When it was first sent is the best SQS can tell of when its failures began.
        metadata[h.DEAD_LETTER_FIRST_FAILURE_AT] = message.sent_at.isoformat()
        metadata[h.DEAD_LETTER_LAST_FAILURE_AT] = message.sent_at.isoformat()
    return metadata
