"""notification-service's pact with order-service: what it needs of each order event, fed
through its worker's pipeline to the notifier, whose real templates and invoice render it.

What it reads: the order id (its record of what was sent, the Message-ID), the number, the
customer's address (the recipient), the lines and the total (printed), and the currency,
which must be IDR: the templates print Rupiah only and refuse anything else. Then each
event's own facts: when it was placed; when and how it was paid (the invoice); why and when
it was cancelled; for a reversal, its kind (one of the three the notices know), its
reference (one notice per reference), its amount and the total reversed so far (printed),
the order's status after it (which notice) and when. The customer id it only decodes.
"""

from __future__ import annotations

import uuid
from pathlib import Path

from pact import match

from shop.contracts import OrderCancelled, OrderCreated, OrderPaid, OrderPaymentReversed
from shop.messaging import Router
from shop.notification.domain.invoice import InvoiceRenderer
from shop.notification.domain.kinds import NotificationKey, NotificationKind
from shop.notification.domain.rendering import EmailRenderer, ShopIdentity
from shop.notification.handlers import build_router
from shop.notification.service_layer.notifier import Notifier

from .consuming import feed
from .messages import (
    NOTIFICATION_SERVICE,
    ORDER_CANCELLED_UNPAID,
    ORDER_PAID,
    ORDER_PAYMENT_REFUNDED_IN_PART,
    ORDER_PLACED,
    ORDER_SERVICE,
)
from .notification_fakes import AcceptingProvider, SentLog
from .order_facts import CUSTOMER_EMAIL, ORDER_NUMBER, order_facts
from .pact_files import ConsumerPact, Expectation, assert_committed
from .wire import EMAIL_ADDRESS, EVENT_ID, ORDER_ID, PAYMENT_ID, envelope, moment

SHOP = ShopIdentity("Skincare Shop", "Jl. Kemang Raya 12", "help@shop.example", "https://s.example")


def facts_it_reads() -> dict[str, object]:
    return order_facts(
        customer_email=match.regex(CUSTOMER_EMAIL, regex=EMAIL_ADDRESS),
        currency="IDR",
    )


ORDER_PLACED_EXPECTED = Expectation(
    ORDER_PLACED,
    envelope(
        OrderCreated,
        {**facts_it_reads(), "placed_at": moment("2026-12-02T09:30:00Z")},
        key=ORDER_ID,
    ),
)
ORDER_PAID_EXPECTED = Expectation(
    ORDER_PAID,
    envelope(
        OrderPaid,
        {
            **facts_it_reads(),
            "payment_id": match.uuid(PAYMENT_ID),
            "payment_reference": match.str("evt_9d2f"),
            "paid_at": moment("2026-12-02T09:42:00Z"),
        },
        key=ORDER_ID,
    ),
)
ORDER_CANCELLED_EXPECTED = Expectation(
    ORDER_CANCELLED_UNPAID,
    envelope(
        OrderCancelled,
        {
            **facts_it_reads(),
            "reason": match.str("payment_expired"),
            "cancelled_at": moment("2026-12-02T10:00:00Z"),
        },
        key=ORDER_ID,
    ),
)
ORDER_PAYMENT_REFUNDED_IN_PART_EXPECTED = Expectation(
    ORDER_PAYMENT_REFUNDED_IN_PART,
    envelope(
        OrderPaymentReversed,
        {
            **facts_it_reads(),
            "kind": match.regex("refund", regex=r"^(refund|chargeback|void)$"),
            "reference": match.str("RF-7731"),
            "amount": match.int(89000),
            "reversed_total": match.int(89000),
            "status": match.str("partially_refunded"),
            "reversed_at": moment("2026-12-03T08:15:00Z"),
        },
        key=ORDER_ID,
    ),
)
PACT_WITH_ORDER_SERVICE = ConsumerPact(
    NOTIFICATION_SERVICE,
    ORDER_SERVICE,
    (
        ORDER_PLACED_EXPECTED,
        ORDER_PAID_EXPECTED,
        ORDER_CANCELLED_EXPECTED,
        ORDER_PAYMENT_REFUNDED_IN_PART_EXPECTED,
    ),
)


def worker_router(provider: AcceptingProvider, sent_log: SentLog) -> Router:
    notifier = Notifier(
        sent_log,
        provider,
        EmailRenderer(SHOP),
        InvoiceRenderer(SHOP),
        message_id_domain="shop.example",
    )
    return build_router(notifier, max_attempts=1, max_in_flight=1)


def test_an_order_placed_gets_its_confirmation_email_to_the_customer() -> None:
    provider, sent_log = AcceptingProvider(), SentLog()

    feed(PACT_WITH_ORDER_SERVICE.build(ORDER_PLACED_EXPECTED), worker_router(provider, sent_log))

    [email] = provider.sent
    assert email.to == CUSTOMER_EMAIL
    assert email.subject == f"Order {ORDER_NUMBER} confirmed"
    assert "Rp 178.000" in email.text
    mark = sent_log.marks[NotificationKey(uuid.UUID(ORDER_ID), NotificationKind.ORDER_CONFIRMATION)]
    assert mark["event_id"] == uuid.UUID(EVENT_ID)


def test_a_paid_order_gets_its_receipt_with_the_invoice_attached() -> None:
    provider, sent_log = AcceptingProvider(), SentLog()

    feed(PACT_WITH_ORDER_SERVICE.build(ORDER_PAID_EXPECTED), worker_router(provider, sent_log))

    [email] = provider.sent
    assert email.to == CUSTOMER_EMAIL
    assert email.subject == f"Receipt for order {ORDER_NUMBER}"
    assert "evt_9d2f" in email.text
    [invoice] = email.attachments
    assert invoice.filename == f"invoice-{ORDER_NUMBER}.pdf"
    assert invoice.data.startswith(b"%PDF")


def test_an_order_cancelled_unpaid_gets_its_cancellation_notice() -> None:
    provider, sent_log = AcceptingProvider(), SentLog()

    feed(
        PACT_WITH_ORDER_SERVICE.build(ORDER_CANCELLED_EXPECTED),
        worker_router(provider, sent_log),
    )

    [email] = provider.sent
    assert email.to == CUSTOMER_EMAIL
    assert email.subject == f"Order {ORDER_NUMBER} cancelled"


def test_a_payment_refunded_in_part_gets_its_notice_once_per_refund() -> None:
    provider, sent_log = AcceptingProvider(), SentLog()
    router = worker_router(provider, sent_log)

    feed(PACT_WITH_ORDER_SERVICE.build(ORDER_PAYMENT_REFUNDED_IN_PART_EXPECTED), router)

    [email] = provider.sent
    assert email.to == CUSTOMER_EMAIL
    assert email.subject == f"Partial refund for order {ORDER_NUMBER}"
    assert "We have refunded Rp 89.000 of your payment" in email.text
    assert email.message_id == f"<payment_reversal.{ORDER_ID}.RF-7731@shop.example>"
    key = NotificationKey(uuid.UUID(ORDER_ID), NotificationKind.PAYMENT_REVERSAL, "RF-7731")
    assert sent_log.marks[key]["event_id"] == uuid.UUID(EVENT_ID)


def test_the_committed_pact_with_order_service_is_what_notification_service_states(
    tmp_path: Path,
) -> None:
    assert_committed(PACT_WITH_ORDER_SERVICE, tmp_path)
