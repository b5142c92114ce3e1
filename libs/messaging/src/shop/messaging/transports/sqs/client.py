"""Every call this package makes to AWS, behind typed methods: SNS (topics, publishing,
subscriptions), SQS (queues, receiving, settling) and SQS's message-move tasks.

aiobotocore builds its clients at run time, untyped; what leaves this module is plain
values and :class:`~shop.messaging.transports.sqs.wire.SqsMessage`, so that nothing else
in the package holds a client.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import AsyncExitStack
from typing import Any, Final, TypeVar

import aiohttp
import structlog
from aiobotocore.config import AioConfig
from aiobotocore.session import AioSession
from botocore.exceptions import BotoCoreError, ClientError

from shop.messaging.errors import MessageTooLarge, MessagingError
from shop.messaging.settings import SqsSettings
from shop.messaging.transports.sqs.wire import (
    SYSTEM_ATTRIBUTES,
    MessageAttributes,
    SqsMessage,
    message_attributes,
    read_message,
)

__all__ = [
    "BATCH_LIMIT",
    "ReceiptExpired",
    "SqsClient",
    "transient",
]

log = structlog.get_logger("shop.messaging")

_Client = Any
"""aiobotocore builds its clients at run time; they carry no types."""
_T = TypeVar("_T")

BATCH_LIMIT: Final = 10
"""Entries per PublishBatch, ReceiveMessage and *Batch call."""
_CONNECTIONS: Final = 50
"""Each long poll holds a connection for its whole wait; settling must not queue behind."""
_NO_SUCH_QUEUE: Final = frozenset({"AWS.SimpleQueueService.NonExistentQueue", "QueueDoesNotExist"})
_NOT_STARTED: Final = "the SQS transport is not started"
_INVALID_PARAMETER: Final = frozenset({"InvalidParameterValue", "InvalidParameterValueException"})
_THROTTLED: Final = frozenset(
    {"Throttling", "ThrottlingException", "RequestThrottled", "KMSThrottlingException"}
)
_RECEIPT_GONE: Final = frozenset(
    {"ReceiptHandleIsInvalid", "MessageNotInflight", "AWS.SimpleQueueService.MessageNotInflight"}
)


class ReceiptExpired(MessagingError):
    """A settling call named a receipt handle that no longer holds its message: its
    visibility ran out, and SQS gives (or gave) it to a receiver again."""


def transient(error: Exception) -> bool:
    """Worth another try: throttling, a server error, a lost connection or a timeout.
    A refusal (a missing queue, a denied access) is not: it will be refused again."""
    if isinstance(error, ClientError):
        status = int(error.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0))
        return _error_code(error) in _THROTTLED or status >= 500
    return isinstance(error, BotoCoreError | aiohttp.ClientError | OSError | TimeoutError)


def _receipt_gone(error: ClientError) -> bool:
    message = str(error.response.get("Error", {}).get("Message", "")).lower()
    code = _error_code(error)
    return code in _RECEIPT_GONE or (code in _INVALID_PARAMETER and "receipt handle" in message)


def _chunks(items: Sequence[_T], size: int = BATCH_LIMIT) -> Iterator[Sequence[_T]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def _error_code(error: ClientError) -> str:
    return str(error.response.get("Error", {}).get("Code", ""))


def _too_large(error: ClientError) -> bool:
    # SQS says so only in words: "Message must be shorter than 262144 bytes".
    message = str(error.response.get("Error", {}).get("Message", ""))
    return _error_code(error) in _INVALID_PARAMETER and "shorter than" in message


def _topic_name(arn: str) -> str:
    return arn.rsplit(":", 1)[-1]


class SqsClient:
    """The SNS and the SQS client of one transport, opened and closed together."""

    def __init__(self, settings: SqsSettings) -> None:
        self._settings = settings
        self._session = AioSession()
        self._stack: AsyncExitStack | None = None
        self._sns_client: _Client | None = None
        self._sqs_client: _Client | None = None

    # -- connection -------------------------------------------------------------------

    @property
    def started(self) -> bool:
        return self._stack is not None

    async def start(self) -> None:
        stack = AsyncExitStack()
        try:
            self._sns_client = await stack.enter_async_context(self._create_client("sns"))
            sqs_config = AioConfig(max_pool_connections=_CONNECTIONS)
            self._sqs_client = await stack.enter_async_context(
                self._create_client("sqs", sqs_config)
            )
        except BaseException:
            self._sns_client = self._sqs_client = None
            await stack.aclose()
            raise
        self._stack = stack

    async def close(self) -> None:
        stack, self._stack = self._stack, None
        self._sns_client = self._sqs_client = None
        if stack is not None:
            await stack.aclose()

    def _client_kwargs(self) -> dict[str, str]:
        kwargs = {"region_name": self._settings.region}
        if self._settings.endpoint_url:
            kwargs["endpoint_url"] = self._settings.endpoint_url
        # Without explicit credentials botocore's default chain finds them (role, env, …).
        if self._settings.access_key_id and self._settings.secret_access_key:
            kwargs["aws_access_key_id"] = self._settings.access_key_id
            kwargs["aws_secret_access_key"] = self._settings.secret_access_key
        return kwargs

    def _create_client(self, service: str, config: AioConfig | None = None) -> Any:
        return self._session.create_client(service, config=config, **self._client_kwargs())

    @property
    def _sns(self) -> _Client:
        if self._sns_client is None:
            raise MessagingError(_NOT_STARTED)
        return self._sns_client

    @property
    def _sqs(self) -> _Client:
        if self._sqs_client is None:
            raise MessagingError(_NOT_STARTED)
        return self._sqs_client

    # -- SNS --------------------------------------------------------------------------

    async def create_topic(self, name: str) -> str:
        """The ARN of the topic ``name``, created if missing (CreateTopic is idempotent)."""
        response = await self._sns.create_topic(Name=name)
        return str(response["TopicArn"])

    async def topics(self) -> dict[str, str]:
        """The ARN of every topic that exists, by topic name."""
        topics: dict[str, str] = {}
        arguments: dict[str, str] = {}
        while True:
            response = await self._sns.list_topics(**arguments)
            for topic in response.get("Topics", []):
                arn = str(topic["TopicArn"])
                topics[_topic_name(arn)] = arn
            token = response.get("NextToken")
            if not token:
                return topics
            arguments = {"NextToken": str(token)}

    async def publish_batch(
        self, topic_arn: str, entries: Mapping[int, tuple[str, MessageAttributes]]
    ) -> dict[int, str]:
        """Publish ``entries`` (index → body and attributes) in one PublishBatch; why SNS
        refused each entry it refused, by index."""
        response = await self._sns.publish_batch(
            TopicArn=topic_arn,
            PublishBatchRequestEntries=[
                {"Id": str(index), "Message": body, "MessageAttributes": attributes}
                for index, (body, attributes) in entries.items()
            ],
        )
        return refused_entries(entries.keys(), response)

    async def subscribe(self, topic_arn: str, queue_arn: str) -> str:
        # Idempotent: SNS answers an existing subscription with its ARN. Raw delivery:
        # the queue gets the message as published, attributes included, not an envelope.
        response = await self._sns.subscribe(
            TopicArn=topic_arn,
            Protocol="sqs",
            Endpoint=queue_arn,
            Attributes={"RawMessageDelivery": "true"},
            ReturnSubscriptionArn=True,
        )
        return str(response["SubscriptionArn"])

    # -- SQS queues -------------------------------------------------------------------

    async def create_queue(self, name: str) -> str:
        # Without attributes CreateQueue is idempotent; attributes are set separately so
        # that a changed setting (visibility, max attempts) reaches an existing queue.
        response = await self._sqs.create_queue(QueueName=name)
        return str(response["QueueUrl"])

    async def queue_url(self, name: str) -> str:
        try:
            response = await self._sqs.get_queue_url(QueueName=name)
        except ClientError as error:
            if _error_code(error) in _NO_SUCH_QUEUE:
                raise MessagingError(
                    f"SQS queue {name!r} does not exist: declare its consumer with "
                    "auto_create on, or create it"
                ) from error
            raise
        return str(response["QueueUrl"])

    async def attributes(self, url: str, names: Sequence[str]) -> dict[str, str]:
        response = await self._sqs.get_queue_attributes(QueueUrl=url, AttributeNames=list(names))
        return {str(name): str(value) for name, value in response.get("Attributes", {}).items()}

    async def queue_arn(self, url: str) -> str:
        return (await self.attributes(url, ["QueueArn"]))["QueueArn"]

    async def set_attributes(self, url: str, attributes: Mapping[str, str]) -> None:
        await self._sqs.set_queue_attributes(QueueUrl=url, Attributes=dict(attributes))

    async def max_receive_count(self, url: str) -> int | None:
        policy = (await self.attributes(url, ["RedrivePolicy"])).get("RedrivePolicy")
        return int(json.loads(policy)["maxReceiveCount"]) if policy else None

    # -- SQS messages -----------------------------------------------------------------

    async def receive(self, url: str, *, wait: int, visibility: int) -> list[SqsMessage]:
        response = await self._sqs.receive_message(
            QueueUrl=url,
            MaxNumberOfMessages=BATCH_LIMIT,
            WaitTimeSeconds=wait,
            VisibilityTimeout=visibility,
            MessageAttributeNames=["All"],
            MessageSystemAttributeNames=list(SYSTEM_ATTRIBUTES),
        )
        return [read_message(raw) for raw in response.get("Messages", [])]

    async def send(self, url: str, body: str, headers: Mapping[str, str], key: str | None) -> str:
        try:
            response = await self._sqs.send_message(
                QueueUrl=url, MessageBody=body, MessageAttributes=message_attributes(headers, key)
            )
        except ClientError as error:
            if _too_large(error):
                raise MessageTooLarge(f"{len(body)} characters: {error}") from error
            raise
        return str(response["MessageId"])

    async def delete(self, url: str, message: SqsMessage) -> None:
        try:
            await self._sqs.delete_message(QueueUrl=url, ReceiptHandle=message.receipt_handle)
        except ClientError as error:
            if _receipt_gone(error):
                raise ReceiptExpired(str(error)) from error
            raise

    async def delete_each(
        self, url: str, messages: Sequence[SqsMessage]
    ) -> list[ReceiptExpired | ClientError | None]:
        """Delete up to :data:`BATCH_LIMIT` ``messages`` in one call; for each, None when it
        was deleted, else what :meth:`delete` would have raised for it alone (SQS refuses
        entries one by one; a failing call raises)."""
        response = await self._sqs.delete_message_batch(
            QueueUrl=url,
            Entries=[
                {"Id": str(index), "ReceiptHandle": message.receipt_handle}
                for index, message in enumerate(messages)
            ],
        )
        results: list[ReceiptExpired | ClientError | None] = [None] * len(messages)
        for failure in response.get("Failed", []):
            # Shaped as the error of a single DeleteMessage, so that it is judged the same
            # way (gone, worth another try, or a refusal).
            status = 500 if failure.get("SenderFault") is False else 400
            error = ClientError(
                {
                    "Error": {
                        "Code": failure.get("Code", ""),
                        "Message": failure.get("Message", ""),
                    },
                    "ResponseMetadata": {"HTTPStatusCode": status},
                },
                "DeleteMessageBatch",
            )
            index = int(failure["Id"])
            results[index] = ReceiptExpired(str(error)) if _receipt_gone(error) else error
        for index in (
            set(range(len(messages)))
            - {int(success["Id"]) for success in response.get("Successful", [])}
            - {int(failure["Id"]) for failure in response.get("Failed", [])}
        ):
            results[index] = ClientError(
                {"Error": {"Code": "Unacknowledged", "Message": "named neither deleted nor failed"},
                 "ResponseMetadata": {"HTTPStatusCode": 500}},
                "DeleteMessageBatch",
            )  # fmt: skip
        return results

    async def change_visibility(self, url: str, message: SqsMessage, seconds: int) -> None:
        try:
            await self._sqs.change_message_visibility(
                QueueUrl=url, ReceiptHandle=message.receipt_handle, VisibilityTimeout=seconds
            )
        except ClientError as error:
            if _receipt_gone(error):
                raise ReceiptExpired(str(error)) from error
            raise

    async def delete_many(self, url: str, messages: Sequence[SqsMessage]) -> list[str]:
        """Delete ``messages``; the ids of those SQS refused to delete."""
        refused: list[str] = []
        for chunk in _chunks(messages):
            response = await self._sqs.delete_message_batch(
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
            response = await self._sqs.change_message_visibility_batch(
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


def refused_entries(sent: Iterable[int], response: Mapping[str, Any]) -> dict[int, str]:
    """Why SNS refused each entry of a PublishBatch it refused, by index.

    An entry SNS names in neither ``Successful`` nor ``Failed`` is refused too: only an
    entry it says it published counts as published (moto drops an entry whose delivery to
    a queue raised, naming it nowhere; the outbox sends it again rather than lose it).
    """
    refused = {
        int(failure["Id"]): f"{failure.get('Code')}: {failure.get('Message')}"
        for failure in response.get("Failed", [])
    }
    published = {int(success["Id"]) for success in response.get("Successful", [])}
    for index in sent:
        if index not in published and index not in refused:
            refused[index] = "Unacknowledged: SNS named it neither published nor failed"
    return refused
