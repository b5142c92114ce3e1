"""What payment-service sends, each message made by its own code on in-memory ports: the
webhook's intake keeps a gateway notification and queues its processing; the worker's
handlers, run through the pipeline, open the order's payment and then apply the
notification. Nothing here builds a message of its own; it only supplies what arrives from
outside (the order, the gateway's notification)."""

from __future__ import annotations

import uuid

from pact.types import Message

from shop.contracts import OrderCreated, PaymentReceived, ProcessPayment, encode, wrap
from shop.contracts.examples import examples
from shop.payment.domain.gateway import ChargeState, GatewayPayment
from shop.payment.domain.notifications import Meaning, Notification, Provider
from shop.payment.service_layer.intake import take_notification

from .delivery import deliver
from .messages import NOTIFICATION_TO_PROCESS, PAYMENT_RECEIVED
from .payment_fakes import FakeWebhookStore, GatewayRecord, PaymentLedger, payment_worker


async def messages() -> dict[str, Message]:
    """Each message payment-service's consumers state, by its name in the pacts."""
    order = examples()[OrderCreated]
    assert isinstance(order, OrderCreated)
    return {
        NOTIFICATION_TO_PROCESS: (await a_notification_taken(order))
        .outbox.the_one(ProcessPayment)
        .as_pact_message(),
        PAYMENT_RECEIVED: await a_payment_received(order),
    }


def paid_in_full(order: OrderCreated) -> Notification:
    """The shop's gateway saying the order was paid, as its webhook route reads it."""
    return Notification(
        provider=Provider.SHOP,
        provider_event_id=f"evt_{uuid.uuid4().hex[:12]}",
        type="payment.paid",
        meaning=Meaning.PAID,
        order_id=order.order_id,
        amount=order.total,
        currency=order.currency,
        provider_payment_id="pay_8d3b",
    )


async def a_notification_taken(
    order: OrderCreated, ledger: PaymentLedger | None = None
) -> PaymentLedger:
    ledger = ledger or PaymentLedger()
    notification = paid_in_full(order)
    raw_body = f'{{"event_id": "{notification.provider_event_id}"}}'.encode()
    await take_notification(FakeWebhookStore(ledger), notification, raw_body)
    return ledger


def charged(order: OrderCreated, notification: Notification) -> GatewayPayment:
    """The gateway's record of the charge ``notification`` tells of."""
    return GatewayPayment(
        provider=Provider.SHOP,
        order_id=order.order_id,
        transaction_id=notification.provider_payment_id,
        status="paid",
        state=ChargeState.PAID,
        amount=order.total,
        currency=order.currency,
    )


async def a_payment_received(order: OrderCreated) -> Message:
    ledger, gateway = PaymentLedger(), GatewayRecord()
    worker = payment_worker(ledger, gateway)
    await deliver(worker, encode(wrap(order, key=str(order.order_id))))
    await a_notification_taken(order, ledger)
    [stored] = ledger.notifications.values()
    gateway.charges[order.order_id] = charged(order, stored.notification)
    await deliver(worker, ledger.outbox.the_one(ProcessPayment).body)
    return ledger.outbox.the_one(PaymentReceived).as_pact_message()
