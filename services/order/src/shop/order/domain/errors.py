"""Business rules a request can break; the API turns each into a 4xx with its details."""

from __future__ import annotations


class DomainError(Exception):
    """A request the rules refuse; retrying it unchanged will not help."""


class UnknownProduct(DomainError):
    def __init__(self, skus: list[str]) -> None:
        super().__init__(f"unknown or inactive product(s): {', '.join(skus)}")
        self.skus = skus


class InsufficientStock(DomainError):
    def __init__(self, sku: str, requested: int, available: int) -> None:
        super().__init__(f"only {available} of {sku} left, {requested} requested")
        self.sku = sku
        self.requested = requested
        self.available = available


class InvalidTransition(DomainError):
    def __init__(self, current: str, target: str) -> None:
        super().__init__(f"an order that is {current} cannot become {target}")
        self.current = current
        self.target = target


class OrderNotFound(DomainError):
    def __init__(self, order_id: object) -> None:
        super().__init__(f"no order {order_id}")
        self.order_id = order_id


class IdempotencyConflict(DomainError):
    """The idempotency key was used before with a different request body."""

    def __init__(self, key: str) -> None:
        super().__init__(
            "this Idempotency-Key was used with a different request body; "
            "use a new key for a new order"
        )
        self.key = key


class InvalidCursor(DomainError):
    """A pagination cursor this service did not hand out."""

    def __init__(self) -> None:
        super().__init__("cursor is not one this service handed out")


class OrderNumberTaken(Exception):
    """A random order number was drawn twice; the checkout draws again. Not a refusal of
    the request (so not a :class:`DomainError`): the customer never sees it unless it
    happens on every attempt, which is a defect."""


class ProductChanged(Exception):
    """A product's name or price changed while a checkout wrote its order with the ones it
    read: the checkout begins again, with the new ones. Not a refusal of the request either:
    the customer never sees it unless it happens on every attempt."""

    def __init__(self, skus: list[str]) -> None:
        super().__init__(f"changed while ordered: {', '.join(skus)}")
        self.skus = skus
