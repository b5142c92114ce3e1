"""What a reversal of the order's payment (PaymentReversed) does to the order: a pure rule.

A chargeback → charged_back; a refund or void reaching what was paid → refunded; less →
partially_refunded. A cancelled order's late payment given back leaves it cancelled; once
all of it is back, its ``refund_due`` conflict ends. A pending order has not heard of its
payment yet (or of its expiry): the reversal came first, and waits."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from shop.contracts import PaymentReversed, ReversalKind
from shop.order.domain.errors import DomainError
from shop.order.domain.status import OrderStatus, check_transition


class ReversalOfUnpaidOrder(DomainError):
    """A reversal for an order that, as far as it knows, was never paid: the payment (or
    the expiry, for a late payment given back) it follows has not arrived yet."""

    def __init__(self, status: OrderStatus) -> None:
        super().__init__(f"a payment reversal for an order that is {status}: nothing paid yet")
        self.status = status


@dataclass(frozen=True)
class RecordedReversal:
    """A reversal kept on an order: enough to tell how much of its payment went back."""

    kind: ReversalKind
    reference: str
    reversed_total: int
    reversed_at: datetime

    @classmethod
    def of(cls, reversal: PaymentReversed) -> RecordedReversal:
        return cls(reversal.kind, reversal.reference, reversal.reversed_total, reversal.reversed_at)

    @property
    def resolution(self) -> str:
        """How a ``refund_due`` conflict it ends is marked resolved."""
        return f"{self.kind.value} {self.reference}"


@dataclass(frozen=True)
class ReversalOutcome:
    status: OrderStatus
    """The order's status after the reversal."""
    resolves_refund_due: bool
    """A late payment for a cancelled order given back in full: its refund_due conflict
    ends (a part given back leaves the rest still due)."""


def after_reversal(
    current: OrderStatus, *, kind: ReversalKind, reversed_total: int, paid_amount: int
) -> ReversalOutcome:
    """The order's status after a reversal of ``kind`` bringing what went back to
    ``reversed_total`` of ``paid_amount``; :class:`ReversalOfUnpaidOrder` for a pending
    order, :class:`~shop.order.domain.errors.InvalidTransition` for a final one."""
    if current == OrderStatus.PENDING:
        raise ReversalOfUnpaidOrder(current)
    if current == OrderStatus.CANCELLED:
        return ReversalOutcome(
            OrderStatus.CANCELLED, resolves_refund_due=reversed_total >= paid_amount
        )
    if kind == ReversalKind.CHARGEBACK:
        target = OrderStatus.CHARGED_BACK
    elif reversed_total >= paid_amount:
        target = OrderStatus.REFUNDED
    else:
        target = OrderStatus.PARTIALLY_REFUNDED
    check_transition(current, target)
    return ReversalOutcome(target, resolves_refund_due=False)
