"""How a message is laid out on SNS and SQS: the body as text, the headers as one JSON
message attribute, the key and the type as attributes of their own; and what a received
message tells of its tries (SQS counts them: ``ApproximateReceiveCount``)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Final

import structlog

from shop.messaging import headers as h
from shop.messaging.message import Delivery

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
SYSTEM_ATTRIBUTES: Final = (
    "ApproximateReceiveCount",
    "ApproximateFirstReceiveTimestamp",
    "SentTimestamp",
)
"""The system attributes :func:`read_message` reads, so the ones a receive asks for."""

MessageAttributes = dict[str, dict[str, str]]
"""SNS and SQS message attributes, the same shape in both."""


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


def message_attributes(headers: Mapping[str, str], key: str | None) -> MessageAttributes:
    """SNS and SQS message attributes (the same shape in both) carrying headers and key."""
    attributes = {HEADERS_ATTRIBUTE: _string(json.dumps(dict(headers), sort_keys=True))}
    if key:  # attribute values may not be empty
        attributes[KEY_ATTRIBUTE] = _string(key)
    message_type = headers.get(h.MESSAGE_TYPE)
    if message_type:
        attributes[TYPE_ATTRIBUTE] = _string(message_type)
    return attributes


def read_message(raw: Mapping[str, Any]) -> SqsMessage:
    """One message of a ReceiveMessage answer."""
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


def delivery_of(message: SqsMessage, queue_name: str) -> Delivery:
    """What the pipeline sees of a received message.

    A message moved back from the dead-letter queue as it was (by hand, or by
    StartMessageMoveTask from the console of AWS) still carries its dead-letter keys: they
    are dropped, and its source is kept.
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


def _string(value: str) -> dict[str, str]:
    return {"DataType": "String", "StringValue": value}


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


def _epoch_millis(value: object) -> datetime | None:
    if value is None:
        return None
    return datetime.fromtimestamp(int(str(value)) / 1000, UTC)
