"""A payment's states, as data: where each may go next, and one check. The gateway's answer
to the status call moves a payment; nothing else does, but the shop's own expiry and
refunds."""

from __future__ import annotations

from enum import StrEnum
from typing import Final


class PaymentStatus(StrEnum):
    PENDING = "pending"
    """Opened for its order; nothing taken yet."""
    PAID = "paid"
    FAILED = "failed"
    """The gateway refused this try; the customer may still pay until the window ends."""
    EXPIRED = "expired"
    """The window ended unpaid, or its order was cancelled first."""
    REFUND_DUE = "refund_due"
    """Money was taken for an order that cannot be fulfilled (paid after it expired, or its
    order cancelled): the shop is refunding it through the gateway."""
    PARTIALLY_REFUNDED = "partially_refunded"
    REFUNDED = "refunded"
    """Everything taken went back (refunds, or a capture voided before settlement)."""
    CHARGED_BACK = "charged_back"
    """The customer's bank took money back: a person looks at it."""


_REVERSIBLE: Final = frozenset(
    {PaymentStatus.PARTIALLY_REFUNDED, PaymentStatus.REFUNDED, PaymentStatus.CHARGED_BACK}
)

ALLOWED: Final[dict[PaymentStatus, frozenset[PaymentStatus]]] = {
    PaymentStatus.PENDING: frozenset(
        {PaymentStatus.PAID, PaymentStatus.FAILED, PaymentStatus.EXPIRED}
    ),
    PaymentStatus.FAILED: frozenset({PaymentStatus.PAID, PaymentStatus.EXPIRED}),
    PaymentStatus.EXPIRED: frozenset({PaymentStatus.REFUND_DUE}),
    PaymentStatus.PAID: _REVERSIBLE | {PaymentStatus.REFUND_DUE},
    PaymentStatus.PARTIALLY_REFUNDED: _REVERSIBLE | {PaymentStatus.REFUND_DUE},
    PaymentStatus.REFUND_DUE: frozenset({PaymentStatus.REFUNDED, PaymentStatus.CHARGED_BACK}),
    PaymentStatus.REFUNDED: frozenset(),
    PaymentStatus.CHARGED_BACK: frozenset(),
}

MONEY_TAKEN: Final = frozenset(
    {
        PaymentStatus.PAID,
        PaymentStatus.PARTIALLY_REFUNDED,
        PaymentStatus.REFUND_DUE,
        PaymentStatus.REFUNDED,
        PaymentStatus.CHARGED_BACK,
    }
)
"""The states in which the shop holds (or held) the customer's money."""

UNPAID: Final = frozenset({PaymentStatus.PENDING, PaymentStatus.FAILED})
"""The states in which the payment window still runs."""


class InvalidPaymentTransition(Exception):
    def __init__(self, current: PaymentStatus, target: PaymentStatus) -> None:
        super().__init__(f"a {current} payment cannot become {target}")
        self.current = current
        self.target = target


def check_transition(current: PaymentStatus, target: PaymentStatus) -> None:
    """Raise :class:`InvalidPaymentTransition` unless ``current`` may become ``target`` (a
    partial refund may follow a partial refund: the one self-transition)."""
    if target not in ALLOWED[current]:
        raise InvalidPaymentTransition(current, target)
