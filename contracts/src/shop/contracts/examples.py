"""A valid example of every contract: for documentation, tests and local experiments."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any

from shop.contracts.base import Contract
from shop.contracts.orders import (
    CancelUnpaidOrder,
    OrderCancelled,
    OrderCreated,
    OrderLine,
    OrderPaid,
    OrderPaymentReversed,
)
from shop.contracts.payments import (
    ExpirePayment,
    PaymentExpired,
    PaymentFailed,
    PaymentReceived,
    PaymentReversed,
    ProcessPayment,
    RefundPayment,
    ReversalKind,
)

ORDER_ID = uuid.UUID("6f1c2a4e-8d3b-4c1a-9e2f-0a1b2c3d4e5f")
PAYMENT_ID = uuid.UUID("0b7e9d2c-5a4f-4e3d-8c2b-1a0f9e8d7c6b")
WHEN = datetime(2026, 12, 2, 9, 30, tzinfo=UTC)

LINES = (
    OrderLine(sku="SERUM-NIA-30", name="Niacinamide 10% Serum 30 ml", quantity=2, unit_price=89000),
    OrderLine(
        sku="SUN-SPF50-50", name="Sunscreen SPF 50 PA++++ 50 ml", quantity=1, unit_price=72000
    ),
)
_ORDER_FACTS: dict[str, Any] = {
    "order_id": ORDER_ID,
    "order_number": "SK-7KQ4-M2XD",
    "customer_id": "cust_42",
    "customer_email": "ayu@example.com",
    "lines": list(LINES),
    "total": 250000,
    "currency": "IDR",
}


def examples() -> dict[type[Contract], Contract]:
    """One valid instance of each contract, by class."""
    return {
        OrderCreated: OrderCreated(**_ORDER_FACTS, placed_at=WHEN),
        OrderPaid: OrderPaid(
            **_ORDER_FACTS, payment_id=PAYMENT_ID, payment_reference="PAY-88231", paid_at=WHEN
        ),
        OrderCancelled: OrderCancelled(
            **_ORDER_FACTS, reason="cancelled by the customer", cancelled_at=WHEN
        ),
        PaymentReceived: PaymentReceived(
            payment_id=PAYMENT_ID,
            order_id=ORDER_ID,
            provider_event_id="evt_9d2f",
            amount=250000,
            currency="IDR",
            paid_at=WHEN,
        ),
        PaymentFailed: PaymentFailed(
            payment_id=PAYMENT_ID,
            order_id=ORDER_ID,
            provider_event_id="evt_9d30",
            reason="card declined",
            failed_at=WHEN,
        ),
        OrderPaymentReversed: OrderPaymentReversed(
            **_ORDER_FACTS,
            kind=ReversalKind.REFUND,
            reference="7",
            amount=100000,
            reversed_total=100000,
            status="partially_refunded",
            reversed_at=WHEN,
        ),
        PaymentExpired: PaymentExpired(payment_id=PAYMENT_ID, order_id=ORDER_ID, expired_at=WHEN),
        PaymentReversed: PaymentReversed(
            payment_id=PAYMENT_ID,
            order_id=ORDER_ID,
            kind=ReversalKind.REFUND,
            reference="7",
            amount=100000,
            reversed_total=100000,
            paid_amount=250000,
            currency="IDR",
            reason="refunded at the gateway",
            reversed_at=WHEN,
        ),
        ExpirePayment: ExpirePayment(order_id=ORDER_ID),
        RefundPayment: RefundPayment(
            payment_id=PAYMENT_ID,
            order_id=ORDER_ID,
            amount=250000,
            refund_key=f"refund-{PAYMENT_ID}",
            reason="paid after its order was cancelled",
        ),
        CancelUnpaidOrder: CancelUnpaidOrder(order_id=ORDER_ID),
        ProcessPayment: ProcessPayment(provider_event_id="evt_9d2f", provider="shop"),
    }
