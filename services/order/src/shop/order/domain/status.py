"""The order state machine: pending → paid → fulfilled, pending → cancelled."""

from __future__ import annotations

from enum import StrEnum

from shop.order.domain.errors import InvalidTransition


class OrderStatus(StrEnum):
    PENDING = "pending"
    PAID = "paid"
    FULFILLED = "fulfilled"
    CANCELLED = "cancelled"


ALLOWED: dict[OrderStatus, frozenset[OrderStatus]] = {
    OrderStatus.PENDING: frozenset({OrderStatus.PAID, OrderStatus.CANCELLED}),
    OrderStatus.PAID: frozenset({OrderStatus.FULFILLED}),
    OrderStatus.FULFILLED: frozenset(),
    OrderStatus.CANCELLED: frozenset(),
}


def check_transition(current: OrderStatus, target: OrderStatus) -> None:
    """Raise :class:`InvalidTransition` unless ``current`` may become ``target``."""
    if target not in ALLOWED[current]:
        raise InvalidTransition(current, target)
