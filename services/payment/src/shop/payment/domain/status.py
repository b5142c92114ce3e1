"""A payment's states: pending until its gateway says paid or failed, expired when its order
is cancelled unpaid. Paid is final."""

from __future__ import annotations

from enum import StrEnum


class PaymentStatus(StrEnum):
    PENDING = "pending"
    PAID = "paid"
    FAILED = "failed"
    EXPIRED = "expired"
