"""payment-service on the bus: every message it adds to its outbox, and the router its
worker runs, as its AsyncAPI document (``payment-service.json`` in
:mod:`shop.contracts.asyncapi`) states them."""

from __future__ import annotations

from importlib.metadata import version
from typing import Final

from shop.contracts import Contract, PaymentFailed, PaymentReceived, ProcessPayment
from shop.messaging.asyncapi import ServiceBus, unwired
from shop.payment.handlers import build_router

PUBLISHES: Final[tuple[type[Contract], ...]] = (ProcessPayment, PaymentReceived, PaymentFailed)
"""What goes into the outbox: ProcessPayment from the webhook intake, PaymentReceived or
PaymentFailed once the worker has applied a notification. The worker's integration tests
check that these, and no others, are written."""


def describe() -> ServiceBus:
    """The ``shop.asyncapi`` entry point: the worker's router, built with no store."""
    return ServiceBus(
        name="payment-service",
        version=version("shop-payment"),
        description=(
            "The payment gateways' webhooks and the worker that applies each payment once. It "
            "queues each notification it keeps as a command to itself, publishes the outcome, "
            "and follows the orders to open and expire their payments."
        ),
        publishes=PUBLISHES,
        routers=(build_router(unwired("PaymentStore")),),
    )
