"""The order state machine: pending → paid → fulfilled, pending → cancelled; a paid or
fulfilled order's payment reversed in part (partially_refunded), in full (refunded) or by
the cardholder's bank (charged_back)."""

from __future__ import annotations

from enum import StrEnum

from shop.order.domain.errors import InvalidTransition


class OrderStatus(StrEnum):
    PENDING = "pending"
    PAID = "paid"
    FULFILLED = "fulfilled"
    CANCELLED = "cancelled"
    PARTIALLY_REFUNDED = "partially_refunded"
    REFUNDED = "refunded"
    CHARGED_BACK = "charged_back"


_REVERSALS = frozenset(
    {OrderStatus.PARTIALLY_REFUNDED, OrderStatus.REFUNDED, OrderStatus.CHARGED_BACK}
)

ALLOWED: dict[OrderStatus, frozenset[OrderStatus]] = {
    OrderStatus.PENDING: frozenset({OrderStatus.PAID, OrderStatus.CANCELLED}),
    OrderStatus.PAID: frozenset({OrderStatus.FULFILLED}) | _REVERSALS,
    OrderStatus.FULFILLED: _REVERSALS,
    OrderStatus.PARTIALLY_REFUNDED: _REVERSALS,
    OrderStatus.REFUNDED: frozenset(),
    OrderStatus.CHARGED_BACK: frozenset(),
    OrderStatus.CANCELLED: frozenset(),
}


def check_transition(current: OrderStatus, target: OrderStatus) -> None:
    """Raise :class:`InvalidTransition` unless ``current`` may become ``target``."""
    if target not in ALLOWED[current]:
        raise InvalidTransition(current, target)
