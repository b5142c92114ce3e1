"""Which notice a reversal of an order's payment gets: a refund in full or in part, a late
payment given back, a chargeback or a void. Each says something else to the customer, so
each has its own subject and templates."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Final

from shop.contracts import OrderPaymentReversed
from shop.contracts.payments import ReversalKind

# The order's status after the reversal, as order-service states it in the event.
REFUNDED: Final = "refunded"
CANCELLED: Final = "cancelled"


class ReversalNotice(StrEnum):
    """One per template pair in ``templates/`` (``<value>.txt.j2``, ``<value>.html.j2``)."""

    REFUND = "payment_refund"
    """The payment given back in full, at once."""
    PARTIAL_REFUND = "payment_partial_refund"
    """Part of the payment given back; also the last part that completes a refund."""
    LATE_PAYMENT_REFUND = "late_payment_refund"
    """A payment that arrived after the order was cancelled, given back."""
    CHARGEBACK = "payment_chargeback"
    """The customer's bank took the payment back."""
    VOID = "payment_void"
    """A card payment cancelled before it was taken: nothing was charged."""


@dataclass(frozen=True, slots=True)
class Reversal:
    """What the notice of one reversal needs beyond the event: which notice, and the facts
    it turns on."""

    notice: ReversalNotice
    of_whole_payment: bool
    """This reversal alone gives back the order's total (not a part of it)."""
    order_cancelled: bool
    """The order was cancelled before the money went back: nothing was to ship."""
    refunded_in_full: bool
    """Every reversal so far adds up to a full refund of the payment."""


def reversal_of(event: OrderPaymentReversed) -> Reversal:
    order_cancelled = event.status == CANCELLED
    notice: ReversalNotice
    if event.kind == ReversalKind.VOID:
        notice = ReversalNotice.VOID
    elif event.kind == ReversalKind.CHARGEBACK:
        notice = ReversalNotice.CHARGEBACK
    elif order_cancelled:
        notice = ReversalNotice.LATE_PAYMENT_REFUND
    elif event.status == REFUNDED and event.amount == event.reversed_total:
        notice = ReversalNotice.REFUND
    else:
        # A part of the payment, or the last part of several: either way the customer is
        # told this amount and what has come back so far.
        notice = ReversalNotice.PARTIAL_REFUND
    return Reversal(
        notice=notice,
        of_whole_payment=event.amount >= event.total,
        order_cancelled=order_cancelled,
        refunded_in_full=event.status == REFUNDED,
    )
