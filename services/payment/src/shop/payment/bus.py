"""payment-service on the bus: every message it adds to its outbox, and the router its
worker runs, as its AsyncAPI document (``payment-service.json`` in
:mod:`shop.contracts.asyncapi`) states them."""

from __future__ import annotations

from importlib.metadata import version
from typing import Final

from shop.contracts import (
    Contract,
    ExpirePayment,
    PaymentExpired,
    PaymentFailed,
    PaymentReceived,
    PaymentReversed,
    ProcessPayment,
    RefundPayment,
)
from shop.messaging.asyncapi import ServiceBus, unwired
from shop.payment.handlers import build_router

PUBLISHES: Final[tuple[type[Contract], ...]] = (
    ProcessPayment,
    ExpirePayment,
    RefundPayment,
    PaymentReceived,
    PaymentFailed,
    PaymentExpired,
    PaymentReversed,
)
"""What goes into the outbox: ProcessPayment from the webhook intake (and again for a
notification that came before its payment opened), ExpirePayment scheduled as a payment
opens, RefundPayment for money the shop cannot keep, and the outcomes the gateway's record
brings: PaymentReceived, PaymentFailed, PaymentExpired, PaymentReversed. The worker's
integration tests check that these, and no others, are written."""


def describe() -> ServiceBus:
    """The ``shop.asyncapi`` entry point: the worker's router, built with no store."""
    return ServiceBus(
        name="payment-service",
        version=version("shop-payment"),
        description=(
            "The payment gateways' webhooks and the worker that brings each payment to what its "
            "gateway records. It queues each notification it keeps as a command to itself, "
            "asks the gateway's status API before anything moves, expires payments whose "
            "window ended, refunds money it cannot keep, and publishes each outcome."
        ),
        publishes=PUBLISHES,
        routers=(
            build_router(
                unwired("PaymentStore"),
                unwired("Gateways"),
                unwired("PaymentWindow"),
                unwired("PaymentMetrics"),
            ),
        ),
    )
