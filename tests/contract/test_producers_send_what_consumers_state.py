"""Each producer's own code makes its messages, and the Pact verifier checks them against
every committed pact that names it as the provider. A producer that stops sending what a
consumer states fails here, the report naming the consumer and the field."""

from __future__ import annotations

import asyncio

from . import order_service_sends, payment_service_sends
from .messages import NOTIFICATION_SERVICE, ORDER_SERVICE, PAYMENT_SERVICE
from .verification import verify_provider


def test_order_service_sends_what_payment_and_notification_service_state() -> None:
    verification = verify_provider(ORDER_SERVICE, asyncio.run(order_service_sends.messages()))

    assert verification.passed, verification.output
    assert verification.consumers == {PAYMENT_SERVICE, NOTIFICATION_SERVICE}


def test_payment_service_sends_what_order_service_and_its_own_worker_state() -> None:
    verification = verify_provider(PAYMENT_SERVICE, asyncio.run(payment_service_sends.messages()))

    assert verification.passed, verification.output
    assert verification.consumers == {ORDER_SERVICE, PAYMENT_SERVICE}
