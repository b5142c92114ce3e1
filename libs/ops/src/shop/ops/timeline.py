"""Everything known about one order, across the services, in time order: read from each
service's own database (its rows about the order, its outbox rows keyed by the order, its
inbox rows of those messages) and from the dead letters on the bus.

How the parts connect: every message about an order is published with the order's id as
its key, so each outbox holds the order's messages under ``key``; a consumer that handled
one recorded its ``event_id`` in its own inbox (``consumer`` is the subscriber id,
``group:subscriber``); notification-service records the ``event_id`` each e-mail answered.
Sent outbox rows are deleted after the retention period (7 days by default), and with them
what links an inbox row to the order.

A failed try leaves no row anywhere (the message is tried again, or dead-lettered): the
tries that failed and were retried, and the deliveries that came again, are read from the
traces, where the shop writes them to a folder (``SHOP_OPS_TRACE_DIR``; ``make run`` does).
In production they are in the tracing backend, and a dead letter counts its attempts.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from shop.messaging.tracing import (
    ATTEMPT,
    CONSUMER_GROUP,
    DUPLICATE,
    MESSAGE_TYPE,
    RETRY_DELAY,
    RETRY_SCHEDULED,
    SUBSCRIBER,
)
from shop.ops.databases import connected
from shop.ops.deadletters import DeadLetterQuery, list_dead_letters
from shop.ops.errors import OpsError
from shop.ops.settings import NOTIFICATION_SERVICE, ORDER_SERVICE, PAYMENT_SERVICE, OpsSettings
from shop.ops.traces import order_spans

if TYPE_CHECKING:  # the span file is development's: the image has no shop.devstack
    from shop.devstack.spans import RecordedSpan


@dataclass(frozen=True, slots=True)
class TimelineEntry:
    at: datetime
    service: str
    what: str
    detail: str


def mask_email(address: str) -> str:
    """``a***@example.com``: enough to recognise, not enough to copy."""
    local, at, domain = address.partition("@")
    return f"{local[:1]}***{at}{domain}" if at else "***"


async def resolve_order_id(settings: OpsSettings, reference: str) -> uuid.UUID:
    """The id of the order ``reference`` names: its id, or its number (``SK-…``), looked up
    in order-service's database."""
    with contextlib.suppress(ValueError):
        return uuid.UUID(reference)
    async with connected(settings, ORDER_SERVICE) as connection:
        order_id = await connection.fetchval(
            "SELECT id FROM orders WHERE number = $1", reference.strip().upper()
        )
    if order_id is None:
        raise OpsError(f"no order numbered {reference!r} in order-service's database")
    return uuid.UUID(str(order_id))


async def order_timeline(
    settings: OpsSettings, order_id: uuid.UUID | str, *, include_dead_letters: bool = True
) -> list[TimelineEntry]:
    """What each service knows of the order ``order_id`` (an id or a number), oldest first.
    Empty when no service knows the order."""
    order = await resolve_order_id(settings, str(order_id))
    entries: list[TimelineEntry] = []
    message_types: dict[uuid.UUID, str] = {}

    async with (
        connected(settings, ORDER_SERVICE) as orders,
        connected(settings, PAYMENT_SERVICE) as payments,
    ):
        entries += await _order_rows(orders, order)
        entries += await _outbox(orders, ORDER_SERVICE, order, message_types)
        entries += await _payment_rows(payments, order)
        entries += await _outbox(payments, PAYMENT_SERVICE, order, message_types)
        # Each service consumes the other's messages, and some of its own.
        entries += await _inbox(orders, ORDER_SERVICE, message_types)
        entries += await _inbox(payments, PAYMENT_SERVICE, message_types)
    async with connected(settings, NOTIFICATION_SERVICE) as connection:
        entries += await _emails(connection, order, message_types)
    spans = await order_spans(settings, order)
    if spans is not None:
        entries += traced_tries(spans)
    if include_dead_letters:
        for letter in await list_dead_letters(settings, DeadLetterQuery(contains=str(order))):
            entries.append(
                TimelineEntry(
                    at=letter.last_failure_at,
                    service=letter.service,
                    what=f"dead letter in {letter.group}",
                    detail=(
                        f"{letter.message_type or 'unknown type'} after {letter.attempts} "
                        f"attempt(s): {letter.error_type}: {letter.error_message} "
                        f"(id {letter.id})"
                    ),
                )
            )
    return sorted(entries, key=lambda entry: entry.at)


def traced_tries(spans: Iterable[RecordedSpan]) -> list[TimelineEntry]:
    """The failed tries that were retried, and the deliveries that came again, of the
    CONSUMER spans among ``spans`` (a span that dead-lettered its message is left to the
    dead letter's own entry)."""
    entries = []
    for span in spans:
        if span.kind != "CONSUMER":
            continue
        message_type = span.attributes.get(MESSAGE_TYPE, "message")
        by = span.attributes.get(SUBSCRIBER) or span.attributes.get(CONSUMER_GROUP, "?")
        entries += [
            TimelineEntry(
                at=event.at,
                service=span.service,
                what=f"{message_type} failed, retry scheduled",
                detail=(
                    f"attempt {event.attributes.get(ATTEMPT, '?')} by {by}: "
                    f"{event.attributes.get('exception.type', 'error')}; next try in "
                    f"{_seconds(event.attributes.get(RETRY_DELAY))}"
                ),
            )
            for event in span.events
            if event.name == RETRY_SCHEDULED
        ]
        if span.attributes.get(DUPLICATE):
            entries.append(
                TimelineEntry(
                    at=span.start,
                    service=span.service,
                    what=f"{message_type} delivered again",
                    detail=f"to {by}, which had handled it: acknowledged, nothing done twice",
                )
            )
    return entries


def _seconds(value: object) -> str:
    return f"{value:.1f} s" if isinstance(value, int | float) else "? s"


def _entry(at: datetime | None, service: str, what: str, detail: str) -> list[TimelineEntry]:
    return [] if at is None else [TimelineEntry(at, service, what, detail)]


async def _order_rows(connection: Any, order: uuid.UUID) -> list[TimelineEntry]:
    row = await connection.fetchrow(
        "SELECT number, status, total, currency, customer_email, created_at, paid_at, "
        "payment_id, cancelled_at FROM orders WHERE id = $1",
        order,
    )
    if row is None:
        return []
    entries = _entry(
        row["created_at"],
        ORDER_SERVICE,
        "order placed",
        f"{row['number']}: {row['total']} {row['currency']} for "
        f"{mask_email(row['customer_email'])} (now {row['status']})",
    )
    entries += _entry(row["paid_at"], ORDER_SERVICE, "order paid", f"payment {row['payment_id']}")
    entries += _entry(row["cancelled_at"], ORDER_SERVICE, "order cancelled", row["number"])
    for conflict in await connection.fetch(
        "SELECT order_status, action, amount, currency, provider_event_id, recorded_at "
        "FROM payment_conflicts WHERE order_id = $1",
        order,
    ):
        entries += _entry(
            conflict["recorded_at"],
            ORDER_SERVICE,
            "payment conflict",
            f"{conflict['action']}: {conflict['amount']} {conflict['currency']} "
            f"({conflict['provider_event_id']}) while {conflict['order_status']}",
        )
    return entries


async def _payment_rows(connection: Any, order: uuid.UUID) -> list[TimelineEntry]:
    entries: list[TimelineEntry] = []
    for payment in await connection.fetch(
        "SELECT id, status, amount, currency, provider, flagged, created_at, paid_at "
        "FROM payments WHERE order_id = $1",
        order,
    ):
        entries += _entry(
            payment["created_at"],
            PAYMENT_SERVICE,
            "payment opened",
            f"{payment['amount']} {payment['currency']} (now {payment['status']})",
        )
        entries += _entry(
            payment["paid_at"],
            PAYMENT_SERVICE,
            "payment paid",
            f"through {payment['provider']} (payment {payment['id']})",
        )
        if payment["flagged"]:
            entries += _entry(
                payment["created_at"], PAYMENT_SERVICE, "payment flagged", payment["flagged"]
            )
    for notice in await connection.fetch(
        "SELECT provider, provider_event_id, type, meaning, amount, currency, received_at, "
        "processed_at, outcome FROM payment_events WHERE order_id = $1",
        order,
    ):
        described = (
            f"{notice['provider']} {notice['type']} {notice['provider_event_id']}: "
            f"{notice['amount']} {notice['currency']}"
        )
        entries += _entry(
            notice["received_at"], PAYMENT_SERVICE, "gateway notification received", described
        )
        entries += _entry(
            notice["processed_at"],
            PAYMENT_SERVICE,
            "gateway notification applied",
            f"{described}: {notice['outcome']}",
        )
    return entries


async def _outbox(
    connection: Any, service: str, order: uuid.UUID, message_types: dict[uuid.UUID, str]
) -> list[TimelineEntry]:
    entries: list[TimelineEntry] = []
    for row in await connection.fetch(
        "SELECT event_id, message_type, created_at, published_at, due_at FROM outbox "
        "WHERE key = $1 ORDER BY id",
        str(order),
    ):
        event_id = uuid.UUID(str(row["event_id"]))
        message_types[event_id] = row["message_type"]
        due = f", due {row['due_at'].isoformat()}" if row["due_at"] else ""
        entries += _entry(
            row["created_at"],
            service,
            f"{row['message_type']} added to the outbox",
            f"event {event_id}{due}",
        )
        entries += _entry(
            row["published_at"], service, f"{row['message_type']} published", f"event {event_id}"
        )
    return entries


async def _inbox(
    connection: Any, service: str, message_types: dict[uuid.UUID, str]
) -> list[TimelineEntry]:
    if not message_types:
        return []
    return [
        TimelineEntry(
            at=row["processed_at"],
            service=service,
            what=f"{row['message_type']} consumed",
            detail=f"by {row['consumer']} (event {row['event_id']})",
        )
        for row in await connection.fetch(
            "SELECT consumer, event_id, message_type, processed_at FROM inbox "
            "WHERE event_id = ANY($1::uuid[])",
            list(message_types),
        )
    ]


async def _emails(
    connection: Any, order: uuid.UUID, message_types: dict[uuid.UUID, str]
) -> list[TimelineEntry]:
    entries: list[TimelineEntry] = []
    for row in await connection.fetch(
        "SELECT kind, recipient, message_id, event_id, sent_at FROM order_notifications "
        "WHERE order_id = $1",
        order,
    ):
        event_id = uuid.UUID(str(row["event_id"]))
        answered = message_types.get(event_id, "event")
        entries += _entry(
            row["sent_at"],
            NOTIFICATION_SERVICE,
            f"e-mail sent: {row['kind']}",
            f"to {mask_email(row['recipient'])}, answering {answered} {event_id} "
            f"(message {row['message_id']})",
        )
    return entries
