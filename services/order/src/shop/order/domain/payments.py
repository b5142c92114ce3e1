"""Whether a payment may settle an order: only a pending order, for its total in its
currency. Any other payment is a conflict for a person to settle, never forced."""

from __future__ import annotations

from enum import StrEnum

from shop.order.domain.orders import OrderView
from shop.order.domain.status import OrderStatus


class PaymentConflict(StrEnum):
    """What a person must do about a payment that was not applied."""

    REFUND_DUE = "refund_due"
    """The order was cancelled before its payment arrived."""
    DUPLICATE_PAYMENT = "duplicate_payment"
    """The order was paid (or fulfilled) already."""
    AMOUNT_MISMATCH = "amount_mismatch"
    """The order is pending, but the payment is not for its total in its currency."""


def payment_conflict(order: OrderView, *, amount: int, currency: str) -> PaymentConflict | None:
    """None when a payment of ``amount`` ``currency`` settles ``order``; else why not."""
    if order.status == OrderStatus.CANCELLED:
        return PaymentConflict.REFUND_DUE
    if order.status != OrderStatus.PENDING:
        return PaymentConflict.DUPLICATE_PAYMENT
    if (order.total, order.currency) != (amount, currency):
        return PaymentConflict.AMOUNT_MISMATCH
    return None
