"""A gateway notification as the shop understands it, whatever its provider's format: which
event of which provider it is, and what it means for the order's payment."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from enum import StrEnum
from typing import Final

MAX_AMOUNT: Final = 10**15
"""The largest amount a gateway's notification may name, in either format: more than any
payment the shop takes, and well inside the database's 64-bit amounts."""


class Provider(StrEnum):
    SHOP = "shop"
    """The shop's own signed format (a gateway the shop controls, and the development one)."""
    MIDTRANS = "midtrans"


class Meaning(StrEnum):
    """What a notification claims happened. A claim only: the worker asks the gateway before
    it acts, and flags a claim the gateway does not bear out."""

    PAID = "paid"
    FAILED = "failed"
    PENDING = "pending"
    """Nothing to do yet (Midtrans says so before the customer has paid)."""
    REFUNDED = "refunded"
    """Money went back: a refund, or a capture cancelled before settlement."""
    CHARGED_BACK = "charged_back"
    """The customer's bank took money back."""


@dataclass(frozen=True, slots=True)
class Notification:
    provider: Provider
    provider_event_id: str
    """Unique per provider: a repeat of the same notification carries the same id."""
    type: str
    """The provider's own word for it (``payment.paid``, ``settlement``…), as received."""
    meaning: Meaning
    order_id: uuid.UUID
    amount: int
    """In the currency's minor unit (IDR has none)."""
    currency: str
    provider_payment_id: str
