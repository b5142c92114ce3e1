"""How a message is laid out on Kafka: a record's key, value and headers, and the headers
that carry a retry through a delay topic.

The key is the aggregate id, so that one key stays on one partition and so in order;
header values are UTF-8. Everything a retry needs to know (attempt, first failure, due
time, origin) travels in headers, because a delay topic is read like any other topic.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Final

import structlog

from shop.messaging import headers as h
from shop.messaging.message import Delivery
from shop.messaging.outcome import Retry

log = structlog.get_logger("shop.messaging")


@dataclass(frozen=True, slots=True)
class KafkaRecord:
    """One consumed record, with typed fields (aiokafka's records are untyped here)."""

    topic: str
    partition: int
    offset: int
    timestamp: int
    key: str | None
    body: bytes
    headers: dict[str, str]

    @property
    def id(self) -> str:
        """Unique within its topic: the id of a dead letter."""
        return f"{self.partition}-{self.offset}"


def encode_key(key: str | None) -> bytes | None:
    return None if key is None else key.encode()


def decode_key(key: bytes | None) -> str | None:
    return None if key is None else key.decode("utf-8", errors="replace")


PUBLISHER_HEADERS: Final = frozenset({"content-type", "correlation_id"})
"""Headers FastStream's publish adds to every record: an empty ``content-type`` (the body
is bytes) and ``correlation_id``, given the shop's own correlation id."""


def decode_headers(raw: Iterable[tuple[str, bytes | None]] | None) -> dict[str, str]:
    """A record's headers as its producer gave them: undecodable bytes replaced (so that one
    foreign header does not stop the consumer), and what FastStream's publish added left
    out; a foreign producer's headers of the same names, other values, are kept."""
    headers = {name: (value or b"").decode("utf-8", errors="replace") for name, value in raw or ()}
    if headers.get("content-type") == "":
        del headers["content-type"]
    if "correlation_id" in headers and headers["correlation_id"] == headers.get(h.CORRELATION_ID):
        del headers["correlation_id"]
    return headers


def retry_headers(delivery: Delivery, outcome: Retry) -> dict[str, str]:
    """The headers of a retry written to a delay topic: the producer's own, plus what the
    next try needs and a delay topic cannot otherwise tell."""
    return {
        **h.original_headers(dict(delivery.headers)),
        h.ATTEMPT: str(outcome.attempt),
        h.FIRST_FAILURE_AT: outcome.first_failure_at.isoformat(),
        h.DUE_AT: str(_epoch_ms(outcome.delay)),
        h.ORIGIN: delivery.source,
    }


def seconds_until_due(record: KafkaRecord) -> float:
    """How long a record of a delay topic must still wait; 0 when it is due (or its due
    time is unreadable: handling it early beats never handling it)."""
    due = record.headers.get(h.DUE_AT)
    if due is None:
        return 0.0
    try:
        return max(0.0, (int(due) - _epoch_ms()) / 1000)
    except ValueError:
        log.warning("ignoring unreadable due time", topic=record.topic, due_at=due)
        return 0.0


def delivery_of(record: KafkaRecord, *, delayed: bool) -> Delivery:
    """What the pipeline sees of a record; ``delayed``: it was read from a delay topic."""
    if not delayed:
        # Event topics carry what producers wrote: every message there is a first try.
        return Delivery(
            body=record.body, headers=record.headers, source=record.topic, key=record.key
        )
    return Delivery(
        body=record.body,
        headers=record.headers,
        source=record.headers.get(h.ORIGIN) or record.topic,
        attempt=_previous_attempts(record) + 1,
        first_failure_at=_header_datetime(record, h.FIRST_FAILURE_AT),
        key=record.key,
    )


def _previous_attempts(record: KafkaRecord) -> int:
    value = record.headers.get(h.ATTEMPT)
    if value is None:
        return 0  # redriven: attempts start again
    try:
        return int(value)
    except ValueError:
        log.warning("ignoring unreadable attempt count", topic=record.topic, attempt=value)
        return 0


def _header_datetime(record: KafkaRecord, name: str) -> datetime | None:
    value = record.headers.get(name)
    if value is None:
        return None
    try:
        return datetime.fromisoformat(value)
    except ValueError:
        log.warning("ignoring unreadable time header", topic=record.topic, header=name)
        return None


def _epoch_ms(seconds_from_now: float = 0.0) -> int:
    return int((time.time() + seconds_from_now) * 1000)
