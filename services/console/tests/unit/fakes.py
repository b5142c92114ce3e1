"""In-memory stand-ins for the console's ports: a few orders, the shop's operations as
lists (dead letters that a redrive or a purge removes, and a record of what was done), and
one small AsyncAPI document."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from pydantic import SecretStr

from shop.console.domain.asyncapi import DocumentView, read_document
from shop.console.domain.errors import NotFound
from shop.console.domain.orders import OrderSummary
from shop.console.domain.passwords import Argon2Cost, hash_password
from shop.console.ports import LetterPage, LetterQuery, Partial, Sources
from shop.console.settings import ConsoleSettings
from shop.ops.consumers import ConsumerCounts
from shop.ops.deadletters import DeadLetterEntry, Purged
from shop.ops.errors import OpsError
from shop.ops.lag import ConsumerLag
from shop.ops.mail import CapturedMail, PdfAttachment
from shop.ops.outbox import OutboxStatus
from shop.ops.reconciliation import Drift, Reconciliation
from shop.ops.timeline import TimelineEntry
from shop.ops.traces import OrderTrace

ADMIN = "operator"
PASSWORD = "correct horse battery staple"
CHEAP = Argon2Cost(time_cost=1, memory_kib=8, parallelism=1)
"""argon2id's least cost: the unit tests log in many times."""
SETTINGS = ConsoleSettings(
    environment="development",
    admin_user=ADMIN,
    admin_password_hash=SecretStr(str(hash_password(PASSWORD, cost=CHEAP))),
    session_secret=SecretStr("unit-test-session-secret-of-the-console"),
    log_json=False,
)

NOW = datetime(2025, 3, 14, 9, 30, tzinfo=UTC)
ORDER_ID = uuid.UUID("0b9f3c1e-52d4-4e7a-9a51-3f2d8c6b7a10")
ORDER = OrderSummary(
    id=ORDER_ID,
    number="SK-7KQ4-M2XD",
    status="paid",
    customer_id="cust_ayu",
    customer_email="ayu@example.com",
    total=250_000,
    currency="IDR",
    created_at=NOW,
    updated_at=NOW + timedelta(minutes=2),
    paid_at=NOW + timedelta(minutes=2),
    payment_reference="midtrans:abc",
)

ORDER_CREATED_BODY = (
    b'{"type":"order.created","payload":{"order_id":"%s"}}' % str(ORDER_ID).encode()
)


class FakeOrders:
    def __init__(self, *orders: OrderSummary) -> None:
        self.orders = list(orders)

    async def search(self, query: str, *, limit: int = 50) -> list[OrderSummary]:
        query = query.strip()
        return [
            order
            for order in self.orders
            if not query or str(order.id) == query or query.upper() in order.number
        ][:limit]

    async def get(self, order_id: uuid.UUID) -> OrderSummary | None:
        return next((order for order in self.orders if order.id == order_id), None)


def letter(
    letter_id: str = "0-17",
    *,
    group: str = "notification-service",
    message_type: str | None = "order.created",
    error_type: str = "PermanentError",
    error_message: str = "the e-mail provider refused the address",
    body: bytes = ORDER_CREATED_BODY,
    truncated: bool = False,
) -> DeadLetterEntry:
    return DeadLetterEntry(
        id=letter_id,
        service=group,
        group=group,
        source="shop-order-created",
        message_type=message_type,
        key=str(ORDER_ID),
        error_type=error_type,
        error_message=error_message,
        attempts=1,
        first_failure_at=NOW,
        last_failure_at=NOW + timedelta(seconds=5),
        truncated=truncated,
        body=body,
        headers={"x-message-type": message_type or "", "x-correlation-id": "req-1"},
    )


@dataclass
class FakeOperations:
    letters: list[DeadLetterEntry] = field(default_factory=list)
    mails: list[CapturedMail] = field(default_factory=list)
    timeline: list[TimelineEntry] = field(default_factory=list)
    redriven: list[tuple[str, str]] = field(default_factory=list)
    purged: list[tuple[str, str]] = field(default_factory=list)
    page_size: int = 50
    redrive_rates: list[float] = field(default_factory=list)
    unreachable_workers: list[str] = field(default_factory=list)
    lag_failure: OpsError | None = None
    timeline_failure: OpsError | None = None
    traces: list[OrderTrace] | None = None
    """None: the console is given no tracing backend."""
    reconciled: Reconciliation | None = None
    failure: OpsError | None = None
    """Raised by every call when set: a part of the shop that cannot be reached."""

    def _fail(self) -> None:
        if self.failure is not None:
            raise self.failure

    async def outbox(self) -> Partial[OutboxStatus]:
        self._fail()
        return Partial(
            [
                OutboxStatus(
                    "order-service",
                    unsent=3,
                    oldest_unsent_age_seconds=75.0,
                    scheduled=12,
                    sent_kept=240,
                ),
                OutboxStatus("payment-service", 0, 0.0, 0, 31),
            ]
        )

    async def consumer_counts(self) -> Partial[ConsumerCounts]:
        self._fail()
        return Partial(
            [
                ConsumerCounts(
                    "notification-service",
                    processed=40,
                    failed=3,
                    retried=2,
                    dead_lettered=len(self.letters),
                    breakers=("smtp open",),
                ),
                ConsumerCounts("order-service", 12, 0, 0, 0),
            ],
            self.unreachable_workers,
        )

    async def reconciliation(self) -> Reconciliation | None:
        self._fail()
        return self.reconciled

    async def reconcile(self) -> Reconciliation:
        self._fail()
        self.reconciled = Reconciliation(
            since="2026-11-27T10:00:00+00:00",
            checked=12,
            drift={"settlement_missed": 1, "paid_not_at_gateway": 0},
            findings=[
                Drift(
                    "settlement_missed",
                    "6f1c2a4e-8d3b-4c1a-9e2f-0a1b2c3d4e5f",
                    "settlement tx-1",
                    repaired=True,
                )
            ],
        )
        return self.reconciled

    async def consumer_lag(self) -> list[ConsumerLag]:
        self._fail()
        if self.lag_failure is not None:
            raise self.lag_failure
        return [
            ConsumerLag("notification-service", "shop-order-created", 4),
            ConsumerLag("order-service", "shop-payment-received", 0),
        ]

    async def groups(self) -> list[str]:
        return ["notification-service", "order-service", "payment-service"]

    async def dead_letters(self, query: LetterQuery, *, cursor: str | None = None) -> LetterPage:
        self._fail()
        matching = [
            entry
            for entry in self.letters
            if (query.group is None or entry.group == query.group)
            and (query.message_type is None or entry.message_type == query.message_type)
            and (query.error_type is None or entry.error_type == query.error_type)
            and (query.text is None or query.text.lower() in entry.error_message.lower())
        ]
        # Pages of PAGE letters; the cursor is the index of the next page's first.
        start = 0 if cursor is None else int(cursor.partition("/")[2] or 0)
        page = matching[start : start + self.page_size]
        more = start + self.page_size < len(matching)
        return LetterPage(page, f"{page[-1].group}/{start + self.page_size}" if more else None)

    async def dead_letter(self, group: str, letter_id: str) -> DeadLetterEntry:
        self._fail()
        for entry in self.letters:
            if (entry.group, entry.id) == (group, letter_id):
                return entry
        raise NotFound(f"{group} has no dead letter {letter_id!r}")

    async def redrive(self, group: str, letter_id: str) -> DeadLetterEntry:
        entry = await self.dead_letter(group, letter_id)
        self.letters.remove(entry)
        self.redriven.append((group, letter_id))
        return entry

    async def redrive_matching(self, query: LetterQuery, *, per_second: float) -> int:
        matching: list[DeadLetterEntry] = []
        cursor: str | None = None
        while True:
            page = await self.dead_letters(query, cursor=cursor)
            matching += [e for e in page.letters if not e.truncated]
            if page.next_cursor is None:
                break
            cursor = page.next_cursor
        for entry in matching:
            await self.redrive(entry.group, entry.id)
        self.redrive_rates.append(per_second)
        return len(matching)

    async def purge(self, group: str, letter_id: str) -> Purged:
        entry = await self.dead_letter(group, letter_id)
        self.letters.remove(entry)
        self.purged.append((group, letter_id))
        return Purged(entry.service, group, (letter_id,))

    async def order_timeline(self, order_id: uuid.UUID) -> list[TimelineEntry]:
        self._fail()
        if self.timeline_failure is not None:
            raise self.timeline_failure
        return list(self.timeline) if order_id == ORDER_ID else []

    async def order_traces(self, order_id: uuid.UUID) -> list[OrderTrace] | None:
        if self.traces is None:
            return None
        return list(self.traces) if order_id == ORDER_ID else []

    async def captured_mail(self) -> list[CapturedMail]:
        self._fail()
        return list(self.mails)

    async def captured_mail_named(self, name: str) -> CapturedMail | None:
        self._fail()
        return next((mail for mail in self.mails if mail.file_name == name), None)


DOCUMENT: dict[str, Any] = {
    "asyncapi": "3.0.0",
    "info": {"title": "order-service", "version": "0.1.0", "description": "The checkout."},
    "servers": {"development": {"host": "127.0.0.1:9092", "protocol": "kafka"}},
    "channels": {
        "order.created.v1": {
            "address": "shop-order-created",
            "description": "An order was committed.",
            "messages": {"Message": {"$ref": "#/components/messages/order.created.v1.Message"}},
        }
    },
    "operations": {
        "order.created.v1": {
            "action": "send",
            "channel": {"$ref": "#/channels/order.created.v1"},
            "messages": [{"$ref": "#/channels/order.created.v1/messages/Message"}],
        }
    },
    "components": {
        "messages": {
            "order.created.v1.Message": {
                "title": "order.created.v1:Message",
                "payload": {"$ref": "#/components/schemas/order.created.v1"},
            }
        },
        "schemas": {
            "order.created.v1": {
                "title": "order.created.v1",
                "type": "object",
                "required": ["event_id", "payload"],
                "properties": {
                    "event_id": {"type": "string", "format": "uuid"},
                    "payload": {"$ref": "#/components/schemas/OrderCreated"},
                },
            },
            "OrderCreated": {
                "title": "OrderCreated",
                "type": "object",
                "required": ["order_number"],
                "properties": {
                    "order_number": {
                        "type": "string",
                        "description": "Human-readable order number.",
                        "pattern": "^[A-Z0-9-]+$",
                    }
                },
            },
        },
    },
}


class FakeDocuments:
    def __init__(self, documents: dict[str, dict[str, Any]] | None = None) -> None:
        self.documents = {"order-service": DOCUMENT} if documents is None else documents

    def services(self) -> list[str]:
        return sorted(self.documents)

    def document(self, service: str) -> DocumentView:
        if service not in self.documents:
            raise NotFound(f"no AsyncAPI document of {service!r}")
        return read_document(service, self.documents[service])

    def raw(self, service: str) -> bytes:
        import json  # noqa: PLC0415

        self.document(service)
        return json.dumps(self.documents[service]).encode()


MAIL = CapturedMail(
    file_name="00001.eml",
    to="ayu@example.com",
    subject="Your order SK-7KQ4-M2XD",
    date=NOW,
    html="<html><body><h1 style='color:#333'>Thank you</h1><script>alert(1)</script></body></html>",
    pdfs=(PdfAttachment(filename="invoice-SK-7KQ4-M2XD.pdf", content=b"%PDF-1.7 fake"),),
)


@dataclass
class FakeShop:
    orders: FakeOrders = field(default_factory=lambda: FakeOrders(ORDER))
    operations: FakeOperations = field(default_factory=FakeOperations)
    documents: FakeDocuments = field(default_factory=FakeDocuments)

    def sources(self) -> Sources:
        return Sources(orders=self.orders, operations=self.operations, documents=self.documents)
