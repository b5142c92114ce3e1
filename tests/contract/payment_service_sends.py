"""What payment-service sends, each message made by its own code on in-memory ports: the
webhook's intake keeps a gateway notification and queues its processing; the worker's
handlers, run through the pipeline, open the order's payment and then apply the
notification. Nothing here builds a message of its own; it only supplies what arrives from
outside (the order, the gateway's notification)."""

from __future__ import annotations

import uuid
from dataclasses import replace

from pact.types import Message

from shop.contracts import (
    ExpirePayment,
    OrderCreated,
    PaymentExpired,
    PaymentReceived,
    PaymentReversed,
    ProcessPayment,
    ReversalKind,
    encode,
    wrap,
)
from shop.contracts.examples import examples
from shop.payment.domain.gateway import ChargeState, GatewayPayment, GatewayReversal
from shop.payment.domain.notifications import Meaning, Notification, Provider
from shop.payment.service_layer.intake import take_notification

from .delivery import deliver
from .messages import (
    NOTIFICATION_TO_PROCESS,
    PAYMENT_EXPIRED,
    PAYMENT_RECEIVED,
    PAYMENT_REFUNDED_IN_PART,
)
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
        PAYMENT_EXPIRED: await a_payment_expired(order),
        PAYMENT_REFUNDED_IN_PART: await a_payment_refunded_in_part(order),
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


async def a_payment_expired(order: OrderCreated) -> Message:
    """The order's payment opened, its window over with nothing at the gateway: the expiry
    its opening scheduled is handled."""
    ledger = PaymentLedger()
    worker = payment_worker(ledger, GatewayRecord())
    await deliver(worker, encode(wrap(order, key=str(order.order_id))))
    await deliver(worker, ledger.outbox.the_one(ExpirePayment).body)
    return ledger.outbox.the_one(PaymentExpired).as_pact_message()


async def a_payment_refunded_in_part(order: OrderCreated) -> Message:
    """Paid, then half of it refunded at the gateway, which notifies."""
    ledger, gateway = PaymentLedger(), GatewayRecord()
    worker = payment_worker(ledger, gateway)
    await deliver(worker, encode(wrap(order, key=str(order.order_id))))
    await a_notification_taken(order, ledger)
    [paid] = ledger.notifications.values()
    gateway.charges[order.order_id] = charged(order, paid.notification)
    await deliver(worker, ledger.outbox.the_one(ProcessPayment).body)
    refund = GatewayReversal(ReversalKind.REFUND, "rf_7c1e", order.total // 2)
    gateway.charges[order.order_id] = replace(
        gateway.charges[order.order_id], status="paid", reversals=(refund,)
    )
    told = replace(
        paid.notification,
        provider_event_id=f"evt_{uuid.uuid4().hex[:12]}",
        type="payment.refunded",
        meaning=Meaning.REFUNDED,
        amount=order.total // 2,
    )
    await take_notification(FakeWebhookStore(ledger), told, b"{}")
    [_, second] = [row for row in ledger.outbox.rows if row.message_type == "payment.process"]
    await deliver(worker, second.body)
    return ledger.outbox.the_one(PaymentReversed).as_pact_message()
