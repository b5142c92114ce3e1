"""Everything known about one order, across the services, in time order: read from each
service's internal API (what it holds about the order, the messages its outbox keeps under
the order's key, which of those messages its consumers handled) and from the dead letters
each worker serves. No table of any service is read here. A service that cannot be asked
leaves what the others answered: an entry names it and says why (only when no service
answers at all does the timeline fail).

How the parts connect: every message about an order is published with the order's id as
its key, so each outbox holds the order's messages under ``key``; a consumer that handled
one recorded its ``event_id`` in its own inbox (``consumer`` is the subscriber id,
``group:subscriber``); notification-service records the ``event_id`` each e-mail answered.
Sent outbox rows are deleted after the retention period (7 days by default), and with them
what links an inbox row to the order.

A failed try leaves no row anywhere (the message is tried again, or dead-lettered): the
tries that failed and were retried, and the deliveries that came again, are read from the
traces, asked of the tracing backend (``SHOP_OPS_TRACING_URL``: production's, or the one
``make run`` serves over its span files); without one the timeline has none of them, and a
dead letter still counts its attempts.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import partial
from typing import Final

from shop.messaging.internal import INBOX_PATH, OUTBOX_MESSAGES_PATH
from shop.messaging.privacy import mask_email
from shop.messaging.tracing import (
    ATTEMPT,
    CONSUMER_GROUP,
    DUPLICATE,
    MESSAGE_TYPE,
    RETRY_DELAY,
    RETRY_SCHEDULED,
    SUBSCRIBER,
)
from shop.ops.deadletters import DeadLetterQuery, list_dead_letters
from shop.ops.errors import OpsError
from shop.ops.internal import NotFoundThere, OperatorPort, listed_by_ids, operator_port, quoted
from shop.ops.settings import NOTIFICATION_SERVICE, ORDER_SERVICE, PAYMENT_SERVICE, OpsSettings
from shop.ops.traces import Span, order_spans

ORDERS_PATH: Final = "/internal/v1/orders"


@dataclass(frozen=True, slots=True)
class TimelineEntry:
    at: datetime
    service: str
    what: str
    detail: str


async def resolve_order_id(settings: OpsSettings, reference: str) -> uuid.UUID:
    """The id of the order ``reference`` names: its id, or its number (``SK-…``), asked of
    order-service."""
    with contextlib.suppress(ValueError):
        return uuid.UUID(reference)
    if not reference.strip():
        raise OpsError("name the order: its id or its number")
    async with operator_port(settings, ORDER_SERVICE) as orders:
        try:
            found = await orders.get(f"{ORDERS_PATH}/{quoted(reference)}")
        except NotFoundThere:
            raise OpsError(f"no order numbered {reference!r} in order-service") from None
    return uuid.UUID(found["order"]["id"])


async def order_timeline(
    settings: OpsSettings, order_id: uuid.UUID | str, *, include_dead_letters: bool = True
) -> list[TimelineEntry]:
    """What each service knows of the order ``order_id`` (an id or a number), oldest first.
    Empty when no service knows the order."""
    order = await resolve_order_id(settings, str(order_id))
    entries: list[TimelineEntry] = []
    message_types: dict[uuid.UUID, str] = {}
    unasked = Unasked()

    async with (
        operator_port(settings, ORDER_SERVICE) as orders,
        operator_port(settings, PAYMENT_SERVICE) as payments,
        operator_port(settings, NOTIFICATION_SERVICE) as notifications,
    ):
        entries += await unasked.asking(ORDER_SERVICE, lambda: _order_rows(orders, order))
        entries += await unasked.asking(
            ORDER_SERVICE, lambda: _outbox(orders, order, message_types)
        )
        entries += await unasked.asking(PAYMENT_SERVICE, lambda: _payment_rows(payments, order))
        entries += await unasked.asking(
            PAYMENT_SERVICE, lambda: _outbox(payments, order, message_types)
        )
        # Each service consumes the other's messages, and some of its own.
        entries += await unasked.asking(ORDER_SERVICE, lambda: _inbox(orders, message_types))
        entries += await unasked.asking(PAYMENT_SERVICE, lambda: _inbox(payments, message_types))
        entries += await unasked.asking(
            NOTIFICATION_SERVICE, lambda: _emails(notifications, order, message_types)
        )
    if settings.tracing_url:
        entries += await unasked.asking(TRACING_BACKEND, lambda: _traced(settings, order))
    if include_dead_letters:
        entries += await _dead_letters(settings, order, unasked)
    unasked.raise_if_everyone()
    return sorted(entries, key=lambda entry: entry.at) + unasked.entries()


TRACING_BACKEND: Final = "tracing backend"


async def _traced(settings: OpsSettings, order: uuid.UUID) -> list[TimelineEntry]:
    """What only the spans tell (tries retried, duplicates)."""
    spans = await order_spans(settings, order)
    return [] if spans is None else traced_tries(spans)


class Unasked:
    """The services that could not be asked, each with the first reason; a service that
    failed once is not asked again for the rest of the timeline."""

    def __init__(self) -> None:
        self.reasons: dict[str, OpsError] = {}
        self.answered: set[str] = set()
        self.at = datetime.now(UTC)

    async def asking(
        self, service: str, read: Callable[[], Awaitable[list[TimelineEntry]]]
    ) -> list[TimelineEntry]:
        """What ``read`` finds at ``service``; nothing, the reason kept, when it fails."""
        if service in self.reasons:
            return []
        try:
            found = await read()
        except OpsError as error:
            self.reasons[service] = error
            return []
        self.answered.add(service)
        return found

    def raise_if_everyone(self) -> None:
        """Nothing to show when no service answered anything (spans alone tell too little
        of an order): the first reason, as it is."""
        if self.reasons and not self.answered - {TRACING_BACKEND}:
            raise next(iter(self.reasons.values()))

    def entries(self) -> list[TimelineEntry]:
        """One entry per service not asked, at the time the timeline was asked for."""
        return [
            TimelineEntry(self.at, service, f"{service} could not be asked", str(error))
            for service, error in self.reasons.items()
        ]


async def _dead_letters(
    settings: OpsSettings, order: uuid.UUID, unasked: Unasked
) -> list[TimelineEntry]:
    """The order's dead letters, service by service (each worker serves its groups')."""
    entries = []
    for service in (ORDER_SERVICE, PAYMENT_SERVICE, NOTIFICATION_SERVICE):
        query = DeadLetterQuery(service=service, contains=str(order))
        entries += await unasked.asking(service, partial(_letter_entries, settings, query))
    return entries


async def _letter_entries(settings: OpsSettings, query: DeadLetterQuery) -> list[TimelineEntry]:
    entries = []
    for letter in await list_dead_letters(settings, query):
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
    return entries


def traced_tries(spans: Iterable[Span]) -> list[TimelineEntry]:
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


def _at(value: object) -> datetime | None:
    return None if value is None else datetime.fromisoformat(str(value))


def _entry(at: object, service: str, what: str, detail: str) -> list[TimelineEntry]:
    when = _at(at)
    return [] if when is None else [TimelineEntry(when, service, what, detail)]


async def _order_rows(orders: OperatorPort, order: uuid.UUID) -> list[TimelineEntry]:
    try:
        found = await orders.get(f"{ORDERS_PATH}/{order}")
    except NotFoundThere:
        return []
    row = found["order"]
    entries = _entry(
        row["created_at"],
        ORDER_SERVICE,
        "order placed",
        f"{row['number']}: {row['total']} {row['currency']} for "
        f"{mask_email(row['customer_email'])} (now {row['status']})",
    )
    entries += _entry(row["paid_at"], ORDER_SERVICE, "order paid", f"payment {row['payment_id']}")
    entries += _entry(row["cancelled_at"], ORDER_SERVICE, "order cancelled", row["number"])
    for conflict in found["payment_conflicts"]:
        entries += _entry(
            conflict["recorded_at"],
            ORDER_SERVICE,
            "payment conflict",
            f"{conflict['action']}: {conflict['amount']} {conflict['currency']} "
            f"({conflict['provider_event_id']}) while {conflict['order_status']}",
        )
    return entries


async def _payment_rows(payments: OperatorPort, order: uuid.UUID) -> list[TimelineEntry]:
    entries: list[TimelineEntry] = []
    found = await payments.get(f"/internal/v1/orders/{order}/payments")
    for payment in found["payments"]:
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
    for notice in found["notifications"]:
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
    port: OperatorPort, order: uuid.UUID, message_types: dict[uuid.UUID, str]
) -> list[TimelineEntry]:
    entries: list[TimelineEntry] = []
    found = await port.get(OUTBOX_MESSAGES_PATH, {"key": str(order)})
    for row in found["messages"]:
        event_id = uuid.UUID(row["event_id"])
        message_types[event_id] = row["message_type"]
        due = f", due {row['due_at']}" if row["due_at"] else ""
        entries += _entry(
            row["created_at"],
            port.service,
            f"{row['message_type']} added to the outbox",
            f"event {event_id}{due}",
        )
        entries += _entry(
            row["published_at"],
            port.service,
            f"{row['message_type']} published",
            f"event {event_id}",
        )
    return entries


async def _inbox(port: OperatorPort, message_types: dict[uuid.UUID, str]) -> list[TimelineEntry]:
    if not message_types:
        return []
    handled = await listed_by_ids(
        port, INBOX_PATH, name="event_ids", ids=message_types, field="handled"
    )
    return [
        entry
        for row in handled
        for entry in _entry(
            row["processed_at"],
            port.service,
            f"{row['message_type']} consumed",
            f"by {row['consumer']} (event {row['event_id']})",
        )
    ]


async def _emails(
    notifications: OperatorPort, order: uuid.UUID, message_types: dict[uuid.UUID, str]
) -> list[TimelineEntry]:
    entries: list[TimelineEntry] = []
    found = await notifications.get(f"/internal/v1/orders/{order}/emails")
    for row in found["emails"]:
        event_id = uuid.UUID(row["event_id"])
        answered = message_types.get(event_id, "event")
        entries += _entry(
            row["sent_at"],
            NOTIFICATION_SERVICE,
            f"e-mail sent: {row['kind']}",
            f"to {mask_email(row['recipient'])}, answering {answered} {event_id} "
            f"(message {row['message_id']})",
        )
    return entries
