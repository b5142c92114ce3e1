"""The e-mails the shop sends about an order: at most one of each kind per order."""

from __future__ import annotations

from enum import StrEnum


class NotificationKind(StrEnum):
    ORDER_CONFIRMATION = "order_confirmation"
    PAYMENT_RECEIPT = "payment_receipt"
    ORDER_CANCELLATION = "order_cancellation"
