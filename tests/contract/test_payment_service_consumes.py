"""payment-service's pacts: with order-service, for the orders it opens and expires payments
for, and with itself, for the command its webhook queues for its worker. Each message goes
through its worker's pipeline to its handlers, on in-memory payments.

What it reads: of an order placed, the order's id and number and the total and currency the
payment must be paid in; of an order cancelled, the id alone; of a notification to process,
its provider event id and its provider (gateways' event ids are unique per gateway only; a
command without one is taken for the shop's own gateway). The other order facts it decodes.
"""

from __future__ import annotations

import uuid
from pathlib import Path

from pact import match

from shop.contracts import OrderCancelled, OrderCreated, PaymentReceived, ProcessPayment
from shop.payment.domain.gateway import ChargeState, GatewayPayment
from shop.payment.domain.notifications import Meaning, Notification, Provider
from shop.payment.domain.payments import Payment
from shop.payment.domain.status import PaymentStatus

from .consuming import feed
from .messages import (
    NOTIFICATION_TO_PROCESS,
    ORDER_CANCELLED_UNPAID,
    ORDER_PLACED,
    ORDER_SERVICE,
    PAYMENT_SERVICE,
)
from .order_facts import ORDER_NUMBER, TOTAL, order_facts
from .pact_files import ConsumerPact, Expectation, assert_committed
from .payment_fakes import GatewayRecord, PaymentLedger, payment_worker
from .wire import ORDER_ID, envelope, moment

PROVIDER_EVENT_ID = "evt_9d2f"

ORDER_PLACED_EXPECTED = Expectation(
    ORDER_PLACED,
    envelope(
        OrderCreated,
        # order_facts() states the id, number, total and currency as the payment reads them.
        {**order_facts(), "placed_at": moment("2026-12-02T09:30:00Z")},
        key=ORDER_ID,
    ),
)
ORDER_CANCELLED_EXPECTED = Expectation(
    ORDER_CANCELLED_UNPAID,
    envelope(
        OrderCancelled,
        {
            **order_facts(),
            "reason": match.str("payment_expired"),
            "cancelled_at": moment("2026-12-02T10:00:00Z"),
        },
        key=ORDER_ID,
    ),
)
NOTIFICATION_EXPECTED = Expectation(
    NOTIFICATION_TO_PROCESS,
    envelope(
        ProcessPayment,
        {
            "provider_event_id": match.str(PROVIDER_EVENT_ID),
            "provider": match.regex(Provider.SHOP.value, regex=r"^(shop|midtrans)$"),
        },
        key=ORDER_ID,
    ),
)
PACT_WITH_ORDER_SERVICE = ConsumerPact(
    PAYMENT_SERVICE, ORDER_SERVICE, (ORDER_PLACED_EXPECTED, ORDER_CANCELLED_EXPECTED)
)
PACT_WITH_ITS_WEBHOOK = ConsumerPact(PAYMENT_SERVICE, PAYMENT_SERVICE, (NOTIFICATION_EXPECTED,))

AN_ORDER = uuid.UUID(ORDER_ID)


def pending_payment(ledger: PaymentLedger) -> Payment:
    payment = Payment(uuid.uuid4(), AN_ORDER, TOTAL, "IDR", PaymentStatus.PENDING)
    ledger.payments[AN_ORDER] = payment
    return payment


def test_an_order_placed_opens_a_pending_payment_for_its_total() -> None:
    ledger = PaymentLedger()

    feed(PACT_WITH_ORDER_SERVICE.build(ORDER_PLACED_EXPECTED), payment_worker(ledger))

    payment = ledger.payments[AN_ORDER]
    assert (payment.amount, payment.currency, payment.status) == (
        TOTAL,
        "IDR",
        PaymentStatus.PENDING,
    )
    assert ledger.order_numbers[AN_ORDER] == ORDER_NUMBER


def test_an_order_cancelled_unpaid_expires_its_pending_payment() -> None:
    ledger = PaymentLedger()
    pending_payment(ledger)

    feed(
        PACT_WITH_ORDER_SERVICE.build(ORDER_CANCELLED_EXPECTED),
        payment_worker(ledger),
    )

    assert ledger.payments[AN_ORDER].status == PaymentStatus.EXPIRED


def test_a_notification_to_process_pays_its_order_and_announces_the_payment() -> None:
    ledger = PaymentLedger()
    payment = pending_payment(ledger)
    ledger.keep(
        Notification(
            provider=Provider.SHOP,
            provider_event_id=PROVIDER_EVENT_ID,
            type="payment.paid",
            meaning=Meaning.PAID,
            order_id=AN_ORDER,
            amount=TOTAL,
            currency="IDR",
            provider_payment_id="pay_1",
        )
    )

    gateway = GatewayRecord()
    gateway.charges[AN_ORDER] = GatewayPayment(
        Provider.SHOP, AN_ORDER, "pay_1", "paid", ChargeState.PAID, TOTAL, "IDR"
    )

    feed(PACT_WITH_ITS_WEBHOOK.build(NOTIFICATION_EXPECTED), payment_worker(ledger, gateway))

    assert ledger.payments[AN_ORDER].status == PaymentStatus.PAID
    received = ledger.outbox.the_event(PaymentReceived)
    assert (received.payment_id, received.amount) == (payment.id, TOTAL)


def test_the_committed_pact_with_order_service_is_what_payment_service_states(
    tmp_path: Path,
) -> None:
    assert_committed(PACT_WITH_ORDER_SERVICE, tmp_path)


def test_the_committed_pact_with_its_own_webhook_is_what_its_worker_states(
    tmp_path: Path,
) -> None:
    assert_committed(PACT_WITH_ITS_WEBHOOK, tmp_path)
