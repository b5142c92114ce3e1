"""What transports carry: raw bytes with headers, the same shape on every transport."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime


@dataclass(frozen=True, slots=True)
class OutgoingMessage:
    """One message to publish: the encoded envelope, its topic and partition key."""

    topic: str
    key: str
    body: bytes
    headers: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Delivery:
    """One message as a consumer received it.

    ``attempt`` counts from 1: the number of this try. ``first_failure_at`` is set from the
    second attempt on. ``source`` is where the message first arrived (the event topic, or
    the consumer's queue), even when this try comes from a delay topic.
    """

    body: bytes
    headers: Mapping[str, str]
    source: str
    attempt: int = 1
    first_failure_at: datetime | None = None
    key: str | None = None
