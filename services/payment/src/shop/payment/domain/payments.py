"""What a gateway's notification does to an order's payment: the rule, as data in and a
decision out."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from enum import StrEnum

from shop.payment.domain.notifications import Meaning, Notification
from shop.payment.domain.status import PaymentStatus


@dataclass(frozen=True, slots=True)
class Payment:
    id: uuid.UUID
    order_id: uuid.UUID
    amount: int
    currency: str
    status: PaymentStatus


class Decision(StrEnum):
    PAY = "pay"
    """Mark paid and publish PaymentReceived."""
    FAIL = "fail"
    """Mark failed and publish PaymentFailed."""
    NOTHING = "nothing"
    """Acknowledge: already settled, or nothing to do yet (see the outcome's words)."""
    MISMATCH = "mismatch"
    """A payment for another amount or currency: flag it for a person, pay nothing."""


def decide(payment: Payment, notification: Notification) -> tuple[Decision, str]:
    """The decision, and the words recorded as the event's outcome."""
    match notification.meaning:
        case Meaning.PENDING:
            return Decision.NOTHING, "pending at the gateway: nothing to do yet"
        case Meaning.REFUNDED:
            return Decision.NOTHING, "refund reported: recorded for a person to settle"
        case Meaning.FAILED if payment.status == PaymentStatus.PENDING:
            return Decision.FAIL, "failed at the gateway"
        case Meaning.FAILED:
            return Decision.NOTHING, f"failure reported for a payment already {payment.status}"
    return _paid(payment, notification)


def _paid(payment: Payment, notification: Notification) -> tuple[Decision, str]:
    if payment.status == PaymentStatus.PAID:
        return Decision.NOTHING, "already paid"
    if (notification.amount, notification.currency) != (payment.amount, payment.currency):
        return Decision.MISMATCH, (
            f"paid {notification.amount} {notification.currency}, "
            f"but the order is {payment.amount} {payment.currency}"
        )
    # An expired payment (its order was cancelled unpaid) is paid all the same: the money
    # arrived, and order-service records the refund that is due.
    return Decision.PAY, "paid"
