"""order-service's pact with payment-service: what it needs of a payment received, of a
payment expired and of a payment reversed, fed through its worker's pipeline to its use
cases, on in-memory orders.

It reads every field: the order to mark paid, the amount and currency it checks against the
order's total, and the payment's id, gateway reference and time, which its OrderPaid
carries on to the receipt. Of an expiry, the order to cancel. Of a reversal, the order, its
kind, reference, amount, total reversed and what was paid (which decide the order's status),
and when, which its OrderPaymentReversed carries on.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from pathlib import Path

from pact import match

from shop.contracts import (
    OrderCancelled,
    OrderPaid,
    OrderPaymentReversed,
    PaymentExpired,
    PaymentReceived,
    PaymentReversed,
)
from shop.order.domain.orders import OrderLineView, OrderRecord, OrderView
from shop.order.domain.status import OrderStatus
from shop.order.handlers import build_router

from .consuming import feed
from .messages import (
    ORDER_SERVICE,
    PAYMENT_EXPIRED,
    PAYMENT_RECEIVED,
    PAYMENT_REFUNDED_IN_PART,
    PAYMENT_SERVICE,
)
from .order_facts import CUSTOMER_EMAIL, LINE_QUANTITY, LINE_UNIT_PRICE, ORDER_NUMBER, TOTAL
from .order_fakes import FakeOrderStore, OrderBook
from .pact_files import ConsumerPact, Expectation, assert_committed
from .wire import CURRENCY_CODE, ORDER_ID, PAYMENT_ID, envelope, moment

PAYMENT_RECEIVED_EXPECTED = Expectation(
    PAYMENT_RECEIVED,
    envelope(
        PaymentReceived,
        {
            "payment_id": match.uuid(PAYMENT_ID),
            "order_id": match.uuid(ORDER_ID),
            "provider_event_id": match.str("evt_9d2f"),
            "amount": match.int(TOTAL),
            "currency": match.regex("IDR", regex=CURRENCY_CODE),
            "paid_at": moment("2026-12-02T09:42:00Z"),
        },
        key=ORDER_ID,
    ),
)
PAYMENT_EXPIRED_EXPECTED = Expectation(
    PAYMENT_EXPIRED,
    envelope(
        PaymentExpired,
        {
            "payment_id": match.uuid(PAYMENT_ID),
            "order_id": match.uuid(ORDER_ID),
            "expired_at": moment("2026-12-02T10:00:00Z"),
        },
        key=ORDER_ID,
    ),
)
PAYMENT_REFUNDED_IN_PART_EXPECTED = Expectation(
    PAYMENT_REFUNDED_IN_PART,
    envelope(
        PaymentReversed,
        {
            "payment_id": match.uuid(PAYMENT_ID),
            "order_id": match.uuid(ORDER_ID),
            "kind": match.regex("refund", regex="^(refund|chargeback|void)$"),
            "reference": match.str("rf_7c1e"),
            "amount": match.int(TOTAL // 2),
            "reversed_total": match.int(TOTAL // 2),
            "paid_amount": match.int(TOTAL),
            "currency": match.regex("IDR", regex=CURRENCY_CODE),
            "reason": match.str("one item returned"),
            "reversed_at": moment("2026-12-03T08:15:00Z"),
        },
        key=ORDER_ID,
    ),
)
PACT_WITH_PAYMENT_SERVICE = ConsumerPact(
    ORDER_SERVICE,
    PAYMENT_SERVICE,
    (PAYMENT_RECEIVED_EXPECTED, PAYMENT_EXPIRED_EXPECTED, PAYMENT_REFUNDED_IN_PART_EXPECTED),
)

AN_ORDER = uuid.UUID(ORDER_ID)


def a_pending_order(status: OrderStatus = OrderStatus.PENDING) -> OrderBook:
    view = OrderView(
        id=AN_ORDER,
        number=ORDER_NUMBER,
        status=status,
        lines=[
            OrderLineView.of(
                "SERUM-NIA-30", "Niacinamide 10% Serum", LINE_QUANTITY, LINE_UNIT_PRICE
            )
        ],
        total=TOTAL,
        currency="IDR",
        created_at=datetime(2026, 12, 2, 9, 30, tzinfo=UTC),
    )
    return OrderBook(orders={AN_ORDER: OrderRecord(view, "cust_42", CUSTOMER_EMAIL)})


def test_a_payment_for_a_pending_order_marks_it_paid_and_announces_it() -> None:
    book = a_pending_order()

    feed(
        PACT_WITH_PAYMENT_SERVICE.build(PAYMENT_RECEIVED_EXPECTED),
        build_router(FakeOrderStore(book)),
    )

    assert book.status_of(AN_ORDER) == OrderStatus.PAID
    paid = book.outbox.the_event(OrderPaid)
    assert (paid.payment_id, paid.payment_reference) == (uuid.UUID(PAYMENT_ID), "evt_9d2f")
    assert book.conflicts == []


def test_an_expired_payment_cancels_a_pending_order_and_announces_it() -> None:
    book = a_pending_order()

    feed(
        PACT_WITH_PAYMENT_SERVICE.build(PAYMENT_EXPIRED_EXPECTED),
        build_router(FakeOrderStore(book)),
    )

    assert book.status_of(AN_ORDER) == OrderStatus.CANCELLED
    assert book.outbox.the_event(OrderCancelled).reason == "payment_expired"


def test_a_refund_in_part_moves_a_paid_order_and_announces_it() -> None:
    book = a_pending_order(OrderStatus.PAID)

    feed(
        PACT_WITH_PAYMENT_SERVICE.build(PAYMENT_REFUNDED_IN_PART_EXPECTED),
        build_router(FakeOrderStore(book)),
    )

    assert book.status_of(AN_ORDER) == OrderStatus.PARTIALLY_REFUNDED
    told = book.outbox.the_event(OrderPaymentReversed)
    assert (told.reference, told.amount, told.status) == (
        "rf_7c1e",
        TOTAL // 2,
        "partially_refunded",
    )


def test_the_committed_pact_with_payment_service_is_what_order_service_states(
    tmp_path: Path,
) -> None:
    assert_committed(PACT_WITH_PAYMENT_SERVICE, tmp_path)
