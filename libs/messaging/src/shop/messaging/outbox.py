"""The transactional outbox writer: publish an event by adding a row in the caller's
transaction. The relay sends it after the commit; a rollback leaves nothing to send."""

from __future__ import annotations

import functools
import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final

import asyncpg
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession

from shop.contracts import Contract, Envelope, encode, wrap
from shop.messaging import headers
from shop.messaging.context import current_envelope
from shop.messaging.schema import OUTBOX_CHANNEL
from shop.messaging.tracing import propagation

OUTBOX_COLUMNS: Final = "event_id, key, message_type, headers, body, due_at"
"""The columns a writer fills, in the order of :func:`outbox_row` (then ``due_at``): for a
hot path that writes its row inside a statement of its own."""


def _insert_and_notify(*rows: Sequence[str]) -> str:
    """The rows, and a NOTIFY that is transactional (the relay wakes on commit, never for a
    rollback; Postgres folds a transaction's identical notifications into one), in one
    round trip. Each row is the placeholders of the driver in use."""
    values = ", ".join(f"({', '.join(row)})" for row in rows)
    return (
        "WITH added AS ("
        f" INSERT INTO outbox ({OUTBOX_COLUMNS})"
        f" VALUES {values})"
        f" SELECT pg_notify('{OUTBOX_CHANNEL}', '')"
    )


_ADD = text(
    _insert_and_notify(
        (":event_id", ":key", ":message_type", "CAST(:headers AS jsonb)", ":body", ":due_at")
    )
)
_COLUMNS = 6


@functools.lru_cache(maxsize=8)
def _add_positional(count: int) -> str:
    """The statement for ``count`` rows on asyncpg (built once per count, so the driver's
    statement cache keeps it prepared)."""
    return _insert_and_notify(
        *(
            tuple(
                f"${n * _COLUMNS + i}{'::jsonb' if i == 4 else ''}" for i in range(1, _COLUMNS + 1)
            )
            for n in range(count)
        )
    )


@dataclass(frozen=True, slots=True)
class OutboxItem:
    """One message for the outbox: an event (or command), its aggregate key, and when it is
    due (None: at once)."""

    message: Contract | Envelope[Contract]
    key: str | None = None
    due_at: datetime | None = None


def message_headers(envelope: Envelope[Any]) -> dict[str, str]:
    """Headers a consumer can route and trace by without decoding the body: the envelope's
    ids, and the ``traceparent`` of the span current as the message is written (the
    request's, or the handler's: the relay's and the consumers' spans become its children;
    none outside any trace). The envelope's own ``traceparent`` field is not read."""
    result = {
        headers.MESSAGE_TYPE: envelope.type,
        headers.EVENT_ID: str(envelope.event_id),
        headers.CORRELATION_ID: envelope.correlation_id,
    }
    propagation.inject(result)
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
    due_at: datetime | None = None,
) -> Envelope[Contract]:
    """Add ``event`` to the outbox inside ``session``'s transaction; return its envelope.

    A bare event is wrapped here (``key`` is then required). The row's ``traceparent``
    header is the current span's (see :func:`message_headers`). Inside a handler the new
    envelope names the handled message as its cause and inherits its correlation id, and
    the row continues the handled message's trace (from the handler's span, or, when no
    span is recorded, from the handled message's ``traceparent``), so a whole checkout can
    be followed across services. ``due_at`` makes it a scheduled message: committed now,
    published by the relay once it is due, however often the processes restart meanwhile.
    """
    envelope = _envelope(event, key, correlation_id)
    row = outbox_row(envelope)
    await session.execute(_ADD, {**row, "headers": json.dumps(row["headers"]), "due_at": due_at})
    return envelope


async def add_on_connection(
    connection: asyncpg.Connection, *items: OutboxItem
) -> list[Envelope[Contract]]:
    """:func:`add` for code that runs its transaction on an asyncpg connection directly (a
    hot path that skips the ORM): the same rows and NOTIFY, all in one statement, in the
    connection's transaction. The rows carry the current span's ``traceparent``, as by
    :func:`add`."""
    if not items:
        raise ValueError("add_on_connection needs at least one item")
    envelopes = [_envelope(item.message, item.key, None) for item in items]
    arguments: list[object] = []
    for envelope, item in zip(envelopes, items, strict=True):
        row = outbox_row(envelope)
        arguments += [
            row["event_id"],
            row["key"],
            row["message_type"],
            json.dumps(row["headers"]),
            row["body"],
            item.due_at,
        ]
    await connection.execute(_add_positional(len(items)), *arguments)
    return envelopes


def new_envelope(
    event: Contract, *, key: str, correlation_id: str | None = None
) -> Envelope[Contract]:
    """``event`` in the envelope :func:`add` would write: its cause the message being handled
    (if any). For a hot path that writes its outbox row inside a statement of its own (with
    :func:`outbox_row`, which writes the trace context in the row's headers)."""
    return wrap(event, key=key, correlation_id=correlation_id, causation=current_envelope())


def _envelope(
    event: Contract | Envelope[Contract],
    key: str | None,
    correlation_id: str | None,
) -> Envelope[Contract]:
    if isinstance(event, Envelope):
        return event
    if key is None:
        raise ValueError("key (the aggregate id) is required to publish a bare event")
    return new_envelope(event, key=key, correlation_id=correlation_id)
