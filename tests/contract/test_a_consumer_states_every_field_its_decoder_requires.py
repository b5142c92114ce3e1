"""Why each consumer's pact states every field the contract's decoder requires, whether its
handler reads it or not: the decoder refuses a message without one before any handler runs,
and the consumer dead-letters it. A pact that left such a field out would let its producer
drop the field and still pass; its consumer test fails instead, naming the field."""

from __future__ import annotations

import pytest

from shop.contracts import OrderCreated

from .consuming import feed
from .messages import ORDER_PLACED, ORDER_SERVICE, PAYMENT_SERVICE
from .order_facts import order_facts
from .pact_files import ConsumerPact, Expectation
from .payment_fakes import PaymentLedger, payment_worker
from .wire import ORDER_ID, envelope, moment


def test_a_pact_without_a_field_the_decoder_requires_fails_its_consumer_test() -> None:
    facts = order_facts()
    del facts["customer_email"]  # payment-service never reads it, but its decoder does
    body = envelope(
        OrderCreated, {**facts, "placed_at": moment("2026-12-02T09:30:00Z")}, key=ORDER_ID
    )
    too_little = ConsumerPact(PAYMENT_SERVICE, ORDER_SERVICE, (Expectation(ORDER_PLACED, body),))

    with pytest.raises(AssertionError, match=r"payload\.customer_email: Field required"):
        feed(too_little.build(), payment_worker(PaymentLedger()))
