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
from shop.contracts.payments import ReversalKind

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


class OrderPaymentReversed(OrderFacts):
    """Money paid for the order went back (a refund, a chargeback, a voided capture): the
    order records it, and the customer is told. A late payment for a cancelled order that
    was refunded is one too (``status`` stays ``cancelled``)."""

    message_type = "order.payment_reversed"
    message_version = 1

    kind: ReversalKind
    reference: NonEmptyText
    """The gateway's id of the reversal."""
    amount: MinorUnits
    reversed_total: MinorUnits
    status: NonEmptyText
    """The order's status after it: ``refunded``, ``partially_refunded``, ``charged_back``,
    or ``cancelled`` for a late payment given back."""
    reversed_at: AwareDatetime


class CancelUnpaidOrder(Command):
    """Cancel the order if it is still unpaid. Retired: checkouts scheduled it for the end of
    the payment window before payment-service owned that window (``ExpirePayment``); the
    ones still scheduled are acknowledged and do nothing."""

    message_type = "order.cancel_unpaid"
    message_version = 1

    order_id: uuid.UUID
