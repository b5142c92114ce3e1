"""order-service on the bus: every message it adds to its outbox, and the router its worker
runs, as its AsyncAPI document (``order-service.json`` in :mod:`shop.contracts.asyncapi`)
states them."""

from __future__ import annotations

from importlib.metadata import version
from typing import Final

from shop.contracts import (
    Contract,
    OrderCancelled,
    OrderCreated,
    OrderPaid,
    OrderPaymentReversed,
)
from shop.messaging.asyncapi import ServiceBus, unwired
from shop.order.handlers import build_router

PUBLISHES: Final[tuple[type[Contract], ...]] = (
    OrderCreated,
    OrderPaid,
    OrderCancelled,
    OrderPaymentReversed,
)
"""What the use cases add to the outbox: the checkout's OrderCreated, OrderPaid,
OrderCancelled and OrderPaymentReversed. The unit tests' outbox refuses anything else."""


def describe() -> ServiceBus:
    """The ``shop.asyncapi`` entry point: the worker's router, built with no store."""
    return ServiceBus(
        name="order-service",
        version=version("shop-order"),
        description=(
            "The checkout gateway. It publishes each order's events; it consumes payments, "
            "their expiry and their reversals (and acknowledges the retired CancelUnpaidOrder)."
        ),
        publishes=PUBLISHES,
        routers=(build_router(unwired("OrderStore")),),
    )
