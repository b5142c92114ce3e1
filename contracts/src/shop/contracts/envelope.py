"""The envelope every message travels in, whatever the transport."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Annotated, Any, Generic, TypeVar

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field, StringConstraints

from shop.contracts.base import Contract

TRACEPARENT_PATTERN = r"^[0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$"
"""W3C Trace Context ``traceparent``: version-trace_id-parent_id-flags."""

PayloadT = TypeVar("PayloadT", bound=Contract)

MessageType = Annotated[str, StringConstraints(pattern=r"^[a-z]+(\.[a-z_]+)+$", max_length=100)]
AggregateKey = Annotated[str, StringConstraints(min_length=1, max_length=200)]


class EnvelopeHead(BaseModel):
    """Just enough of an envelope to know which contract its payload follows."""

    model_config = ConfigDict(strict=True, extra="ignore", frozen=True)

    type: MessageType
    version: Annotated[int, Field(ge=1)]


class Envelope(BaseModel, Generic[PayloadT]):
    """Metadata common to all messages, around a typed payload.

    ``event_id`` is the deduplication key: a redelivered message keeps it, a new message
    never reuses it. ``key`` is the aggregate id that orders and partitions messages.
    """

    model_config = ConfigDict(strict=True, extra="allow", frozen=True)

    event_id: uuid.UUID
    type: MessageType
    version: Annotated[int, Field(ge=1)]
    occurred_at: AwareDatetime
    key: AggregateKey
    correlation_id: Annotated[str, StringConstraints(min_length=1, max_length=200)]
    causation_id: uuid.UUID | None = None
    # Deprecated: shop.messaging no longer sets it nor reads it (wrap() still copies a
    # cause's, which only envelopes of older releases have). A message's trace context
    # travels in its ``traceparent`` header alone (shop.messaging.tracing). The field stays,
    # optional, so that the schema stays compatible: removing it would need a new version of
    # every message, and envelopes of older releases (a backlog, a dead letter) carry it.
    traceparent: Annotated[str, StringConstraints(pattern=TRACEPARENT_PATTERN)] | None = None
    payload: PayloadT


def wrap(
    payload: PayloadT,
    *,
    key: str,
    correlation_id: str | None = None,
    causation: Envelope[Contract] | None = None,
    traceparent: str | None = None,
    occurred_at: datetime | None = None,
) -> Envelope[PayloadT]:
    """Put ``payload`` in a new envelope.

    A message caused by another one inherits its correlation id and trace context and
    names it as its cause, so that a whole checkout can be followed across services.
    """
    event_id = uuid.uuid4()
    if causation is not None:
        correlation_id = correlation_id or causation.correlation_id
        traceparent = traceparent or causation.traceparent
    envelope_class: Any = Envelope[type(payload)]  # type: ignore[misc]
    envelope: Envelope[PayloadT] = envelope_class(
        event_id=event_id,
        type=payload.message_type,
        version=payload.message_version,
        occurred_at=occurred_at or datetime.now(UTC),
        key=key,
        correlation_id=correlation_id or str(event_id),
        causation_id=causation.event_id if causation is not None else None,
        traceparent=traceparent,
        payload=payload,
    )
    return envelope
