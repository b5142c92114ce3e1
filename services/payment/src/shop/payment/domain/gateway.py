"""What a payment gateway's own API says of an order's payment, in the shop's words: the
answer the worker acts on. A notification only says "look now"; this is what it looks at.

The adapters (``adapters/gateway_*.py``) read each provider's status document into these
values; the rules (``domain/payments.py``) compare them with the shop's payment."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum

from shop.contracts import ReversalKind
from shop.payment.domain.notifications import Provider

__all__ = [
    "ChargeState",
    "GatewayPayment",
    "GatewayReversal",
    "RefundRequest",
    "RefundResult",
    "ReversalKind",
]


class ChargeState(StrEnum):
    """Where the charge itself stands at the gateway, whatever was reversed after."""

    PENDING = "pending"
    """Not paid yet (created, waiting for the customer, a card authorised but not captured,
    a capture held for a fraud review)."""
    PAID = "paid"
    """The money was taken (captured or settled); reversals, if any, are listed beside."""
    FAILED = "failed"
    """Never paid, and never will be: denied, cancelled before capture, expired, failed."""
    VOIDED = "voided"
    """Captured, then cancelled before it settled: the money was taken and given back."""


@dataclass(frozen=True, slots=True)
class GatewayReversal:
    """One refund or chargeback of a charge, as the gateway lists it."""

    kind: ReversalKind
    reference: str
    """The gateway's id of this reversal (Midtrans' ``refund_chargeback_id``, a refund's
    ``refund_key``): unique per charge, so each partial refund is an event of its own."""
    amount: int
    at: datetime | None = None


@dataclass(frozen=True, slots=True)
class GatewayPayment:
    """The gateway's record of an order's payment (its latest charge for the order)."""

    provider: Provider
    order_id: uuid.UUID
    transaction_id: str
    """The gateway's id of the charge."""
    status: str
    """The provider's own word (``settlement``, ``partial_refund``…), as it answered."""
    state: ChargeState
    amount: int
    """What was charged, in the currency's minor unit (IDR has none)."""
    currency: str
    reversals: tuple[GatewayReversal, ...] = ()
    settled_at: datetime | None = None
    in_review: bool = False
    """A capture the gateway holds for a fraud review (Midtrans' ``challenge``): PENDING
    until the gateway approves or denies it, whatever the payment window says."""

    @property
    def reversed_amount(self) -> int:
        return sum(reversal.amount for reversal in self.reversals)


@dataclass(frozen=True, slots=True)
class RefundRequest:
    order_id: uuid.UUID
    refund_key: str
    """The idempotency key: the gateway makes one refund per key, however often asked."""
    amount: int
    reason: str


@dataclass(frozen=True, slots=True)
class RefundResult:
    """The gateway accepted the refund (or had accepted it already for this key)."""

    reference: str
    """The gateway's id of the refund, as its status document will list it."""
    amount: int
