"""The rule that maps a reversal of the order's payment onto the order, for every status and
every kind of reversal, in part and in full."""

from __future__ import annotations

import pytest

from shop.contracts import ReversalKind
from shop.order.domain.errors import InvalidTransition
from shop.order.domain.reversals import ReversalOfUnpaidOrder, after_reversal
from shop.order.domain.status import OrderStatus

S = OrderStatus
K = ReversalKind
PAID_AMOUNT = 250000

EXPECTED: dict[tuple[OrderStatus, ReversalKind, bool], OrderStatus | type[Exception]] = {}
for status in (S.PAID, S.FULFILLED, S.PARTIALLY_REFUNDED):
    EXPECTED[status, K.CHARGEBACK, False] = S.CHARGED_BACK
    EXPECTED[status, K.CHARGEBACK, True] = S.CHARGED_BACK
    for kind in (K.REFUND, K.VOID):
        EXPECTED[status, kind, True] = S.REFUNDED
        EXPECTED[status, kind, False] = S.PARTIALLY_REFUNDED
for kind in K:
    for full in (True, False):
        EXPECTED[S.PENDING, kind, full] = ReversalOfUnpaidOrder
        EXPECTED[S.CANCELLED, kind, full] = S.CANCELLED
        EXPECTED[S.REFUNDED, kind, full] = InvalidTransition
        EXPECTED[S.CHARGED_BACK, kind, full] = InvalidTransition


def test_every_status_and_kind_is_covered() -> None:
    assert len(EXPECTED) == len(S) * len(K) * 2


@pytest.mark.parametrize(("status", "kind", "full"), sorted(EXPECTED))
def test_a_reversal_moves_the_order_as_designed(
    status: OrderStatus, kind: ReversalKind, full: bool
) -> None:
    expected = EXPECTED[status, kind, full]
    reversed_total = PAID_AMOUNT if full else PAID_AMOUNT - 1
    if isinstance(expected, type):
        with pytest.raises(expected):
            after_reversal(
                status, kind=kind, reversed_total=reversed_total, paid_amount=PAID_AMOUNT
            )
        return
    outcome = after_reversal(
        status, kind=kind, reversed_total=reversed_total, paid_amount=PAID_AMOUNT
    )
    assert outcome.status == expected
    # Only the whole late payment given back ends a cancelled order's refund_due.
    assert outcome.resolves_refund_due == (status == S.CANCELLED and full)


def test_more_than_was_paid_is_a_full_refund() -> None:
    outcome = after_reversal(S.PAID, kind=K.REFUND, reversed_total=300000, paid_amount=250000)
    assert outcome.status == S.REFUNDED


def test_a_pending_order_is_named_in_the_error() -> None:
    with pytest.raises(ReversalOfUnpaidOrder, match="pending"):
        after_reversal(S.PENDING, kind=K.REFUND, reversed_total=1, paid_amount=1)
