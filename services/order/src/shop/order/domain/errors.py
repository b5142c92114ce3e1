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
