"""The transactional outbox writer: publish an event by adding a row in the caller's
transaction. The relay sends it after the commit; a rollback leaves nothing to send."""

from __future__ import annotations

import json
from typing import Any

import asyncpg
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession

from shop.contracts import Contract, Envelope, encode, wrap
from shop.messaging import headers
from shop.messaging.context import current_envelope
from shop.messaging.schema import OUTBOX_CHANNEL


def _insert_and_notify(*values: str) -> str:
    """The row, and a NOTIFY that is transactional (the relay wakes on commit, never for a
    rollback; Postgres folds a transaction's identical notifications into one), in one
    round trip. ``values`` are the placeholders of the driver in use."""
    return (
        "WITH added AS ("
        " INSERT INTO outbox (event_id, key, message_type, headers, body)"
        f" VALUES ({', '.join(values)}))"
        f" SELECT pg_notify('{OUTBOX_CHANNEL}', '')"
    )


_ADD = text(
    _insert_and_notify(":event_id", ":key", ":message_type", "CAST(:headers AS jsonb)", ":body")
)
_ADD_POSITIONAL = _insert_and_notify("$1", "$2", "$3", "$4::jsonb", "$5")


def message_headers(envelope: Envelope[Any]) -> dict[str, str]:
    """Headers a consumer can route and trace by without decoding the body."""
    result = {
        headers.MESSAGE_TYPE: envelope.type,
        headers.EVENT_ID: str(envelope.event_id),
        headers.CORRELATION_ID: envelope.correlation_id,
    }
    if envelope.traceparent:
        result[headers.TRACEPARENT] = envelope.traceparent
    return result


def outbox_row(envelope: Envelope[Any]) -> dict[str, Any]:
    """The outbox row of ``envelope`` (``add`` writes one; bulk loaders write many)."""
    return {
        "event_id": envelope.event_id,
        "key": envelope.key,
        "message_type": envelope.type,
        "headers": message_headers(envelope),
        "body": encode(envelope),
    }


async def add(
    session: AsyncSession,
    event: Contract | Envelope[Contract],
    *,
    key: str | None = None,
    correlation_id: str | None = None,
    traceparent: str | None = None,
) -> Envelope[Contract]:
    """Add ``event`` to the outbox inside ``session``'s transaction; return its envelope.

    A bare event is wrapped here (``key`` is then required). Inside a handler the new
    envelope names the handled message as its cause and inherits its correlation id and
    trace context, so a whole checkout can be followed across services.
    """
    envelope = _envelope(event, key, correlation_id, traceparent)
    row = outbox_row(envelope)
    await session.execute(_ADD, {**row, "headers": json.dumps(row["headers"])})
    return envelope


async def add_on_connection(
    connection: asyncpg.Connection,
    event: Contract | Envelope[Contract],
    *,
    key: str | None = None,
    correlation_id: str | None = None,
    traceparent: str | None = None,
) -> Envelope[Contract]:
    """:func:`add` for code that runs its transaction on an asyncpg connection directly (a
    hot path that skips the ORM): the same row and NOTIFY, in the connection's transaction."""
    envelope = _envelope(event, key, correlation_id, traceparent)
    row = outbox_row(envelope)
    await connection.execute(
        _ADD_POSITIONAL,
        row["event_id"],
        row["key"],
        row["message_type"],
        json.dumps(row["headers"]),
        row["body"],
    )
    return envelope


def _envelope(
    event: Contract | Envelope[Contract],
    key: str | None,
    correlation_id: str | None,
    traceparent: str | None,
) -> Envelope[Contract]:
    if isinstance(event, Envelope):
        return event
    if key is None:
        raise ValueError("key (the aggregate id) is required to publish a bare event")
    return wrap(
        event,
        key=key,
        correlation_id=correlation_id,
        traceparent=traceparent,
        causation=current_envelope(),
    )
