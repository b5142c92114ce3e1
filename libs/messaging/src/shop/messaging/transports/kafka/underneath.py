"""What the Kafka transport needs and FastStream's public API does not say, in one place.

Everything else goes through FastStream's own API: the broker, its subscribers (one per
consumer group), its publish (so that its ``TestKafkaBroker`` takes what the client
publishes). Each reach-under below names the guarantee that needs it; the tests
``test_kafka_underneath.py`` (unit: why each is needed; integration: that each is still
there) pin them against the installed FastStream and aiokafka, so that an upgrade that
moves one fails there, loudly, first.

1. :func:`group_consumer`: the aiokafka consumer a subscriber runs. Offsets are committed
   up to the oldest unfinished message only (FastStream's acknowledgement commits the
   member's whole position, finished or not), a partition is paused and rewound while a
   key waits for its retry, and the member's assignment is read.
2. :func:`admin_client`: the broker's aiokafka admin client, to list and describe topics
   (FastStream's admin only creates them).
3. :func:`committing_consumer`: a consumer from the broker's own builder (its connection
   settings), to read a consumer's dead-letter topic in a group of its own, a bounded
   batch at a time, committing only what the store has kept (FastStream's subscribers
   hand one message at a time to a handler and commit on their own).
4. :class:`FastStreamLog`: how a consumer hears that fetching fails. FastStream's consume
   loop logs a ``KafkaError`` from the subscriber's own task, with no word of which
   subscriber, sleeps and fetches again, forever, and says so nowhere else.
5. :func:`record_as_it_came`: FastStream's parser decodes header values strictly (a null or
   non-UTF-8 value raises, and the loop then skips the record, which a later commit
   passes); this one keeps the aiokafka record as it came, for the transport to read.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from typing import Any

import structlog
from aiokafka import AIOKafkaConsumer
from aiokafka.admin import AIOKafkaAdminClient
from aiokafka.errors import KafkaError
from faststream.kafka import KafkaBroker
from faststream.kafka.message import FAKE_CONSUMER
from faststream.kafka.message import KafkaMessage as ParsedMessage

FetchFailed = Callable[[KafkaError], None]


def group_consumer(subscriber: Any) -> AIOKafkaConsumer | None:
    """The aiokafka consumer ``subscriber`` runs; None until it is started."""
    consumer: AIOKafkaConsumer | None = subscriber.consumer
    return consumer


def admin_client(broker: KafkaBroker) -> AIOKafkaAdminClient:
    """The started broker's aiokafka admin client."""
    client: AIOKafkaAdminClient = broker.config.admin_client
    return client


def committing_consumer(
    broker: KafkaBroker, *, group_id: str, client_id: str, session_timeout_ms: int
) -> AIOKafkaConsumer:
    """A consumer in ``group_id`` that commits only when told, not started."""
    builder: Callable[..., AIOKafkaConsumer] = broker.config.builder
    return builder(
        group_id=group_id,
        client_id=client_id,
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        session_timeout_ms=session_timeout_ms,
    )


class FastStreamLog:
    """FastStream's log lines (its consume loop's errors, its rebalances) in the workers'
    JSON logs, instead of a text format of its own on the same stdout; and each
    ``KafkaError`` a watched subscriber's task logs, told to that subscriber's consumer."""

    def __init__(self) -> None:
        self._log = structlog.get_logger("faststream")
        self._fetch_failed: dict[Any, FetchFailed] = {}

    def watch(self, subscriber: Any, fetch_failed: FetchFailed) -> None:
        """Tell ``fetch_failed`` of each ``KafkaError`` that ``subscriber``'s tasks log."""
        self._fetch_failed[subscriber] = fetch_failed

    def log(
        self,
        level: int,
        msg: Any,
        /,
        *,
        exc_info: Any = None,
        extra: Mapping[str, Any] | None = None,
    ) -> None:
        self._log.log(level, str(msg), exc_info=exc_info, **dict(extra or {}))
        if not isinstance(exc_info, KafkaError):
            return
        task = asyncio.current_task()
        for subscriber, fetch_failed in self._fetch_failed.items():
            if task in getattr(subscriber, "tasks", ()):
                fetch_failed(exc_info)


async def record_as_it_came(raw: Any) -> ParsedMessage:
    """The subscriber's parser: the record, unread (the transport reads it itself, and
    replaces what it cannot decode)."""
    return ParsedMessage(
        raw_message=raw,
        body=raw.value or b"",
        message_id=f"{raw.offset}-{raw.timestamp}",
        consumer=FAKE_CONSUMER,  # never acknowledged: offsets are committed explicitly
    )


async def record_itself(message: ParsedMessage) -> Any:
    """The subscriber's decoder: the aiokafka record, which the handler is given as it is
    (the broker runs without FastDepends). FastStream's decoder would parse every body as
    JSON (and raise on one that is not, under a JSON content type); the pipeline decodes
    against the contract itself."""
    return message.raw_message
