"""Events published by order-service."""

from __future__ import annotations

import uuid
from typing import Annotated

from pydantic import AwareDatetime, Field, StringConstraints

from shop.contracts.base import (
    Command,
    ContractModel,
    CurrencyCode,
    EmailAddress,
    Event,
    MinorUnits,
    NonEmptyText,
    Sku,
)

OrderNumber = Annotated[
    str,
    StringConstraints(min_length=4, max_length=32, pattern=r"^[A-Z0-9-]+$"),
    Field(description="Human-readable order number, unique per order.", examples=["SK-7KQ4-M2XD"]),
]
CustomerId = Annotated[str, StringConstraints(min_length=1, max_length=200)]


class OrderLine(ContractModel):
    """One product line of an order, priced at checkout time."""

    sku: Sku
    name: NonEmptyText
    quantity: Annotated[int, Field(ge=1)]
    unit_price: MinorUnits


class OrderFacts(Event):
    """What every order event carries, so that no consumer needs order-service's tables."""

    order_id: uuid.UUID
    order_number: OrderNumber
    customer_id: CustomerId
    customer_email: EmailAddress
    lines: Annotated[list[OrderLine], Field(min_length=1)]
    total: MinorUnits
    currency: CurrencyCode


class OrderCreated(OrderFacts):
    """An order was committed with its stock reserved; it awaits payment."""

    message_type = "order.created"
    message_version = 1

    placed_at: AwareDatetime


class OrderPaid(OrderFacts):
    """A pending order's payment was received; the order is now paid."""

    message_type = "order.paid"
    message_version = 1

    payment_id: uuid.UUID
    payment_reference: NonEmptyText
    paid_at: AwareDatetime


class OrderCancelled(OrderFacts):
    """A pending order was cancelled and its stock released."""

    message_type = "order.cancelled"
    message_version = 1

    reason: NonEmptyText
    cancelled_at: AwareDatetime


class CancelUnpaidOrder(Command):
    """Cancel the order if it is still unpaid: scheduled by its checkout for the end of its
    payment window, and sent to order-service itself."""

    message_type = "order.cancel_unpaid"
    message_version = 1

    order_id: uuid.UUID
