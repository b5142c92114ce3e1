"""An order's payment over its life: opened for each OrderCreated, settled by its gateway's
notifications one at a time (locked), expired when its order is cancelled unpaid."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from shop.contracts import OrderCancelled, OrderCreated, PaymentFailed, PaymentReceived
from shop.payment.domain.errors import AmountMismatch, NotificationNotKept, PaymentNotOpened
from shop.payment.domain.notifications import Notification
from shop.payment.domain.payments import Decision, Payment, decide
from shop.payment.ports import Payments, PaymentStore


async def open_payment(payments: Payments, order: OrderCreated) -> bool:
    """A pending payment for the order's total; a repeat changes nothing."""
    return await payments.open(
        order.order_id, order_number=order.order_number, amount=order.total, currency=order.currency
    )


async def expire_payment(payments: Payments, order: OrderCancelled) -> bool:
    """A pending payment expires with its order; a paid one stays paid (order-service records
    the refund that is due). A payment not opened yet is opened expired: the cancellation
    outran the order's OrderCreated (they travel on topics of their own, so a customer who
    cancels straight after the checkout can be first), which then finds it there and leaves
    it be, never opening a pending payment for an order that no longer is."""
    return await payments.expire(
        order.order_id, order_number=order.order_number, amount=order.total, currency=order.currency
    )


async def process_notification(
    store: PaymentStore, provider: str, provider_event_id: str, log: Any
) -> str:
    """Apply a kept notification to its order's payment, in one transaction with the
    payment locked, and return the outcome recorded. Safe to repeat: a settled payment is
    left as it is.

    :class:`NotificationNotKept` for an id no webhook kept; :class:`PaymentNotOpened` when
    the order's payment does not exist yet (retried); :class:`AmountMismatch` when it was
    paid another amount: flagged for a person once the lock is released, nothing paid."""
    async with store.transaction() as payments:
        stored = await payments.notification(provider, provider_event_id)
        if stored is None:
            raise NotificationNotKept(f"no {provider} notification {provider_event_id} kept")
        notification = stored.notification
        payment = await payments.lock(notification.order_id)
        if payment is None:
            raise PaymentNotOpened(f"no payment opened yet for order {notification.order_id}")
        decision, outcome = decide(payment, notification)
        if decision != Decision.MISMATCH:
            await _apply(payments, payment, notification, decision, outcome)
            await payments.settle(stored, outcome)
    if decision == Decision.MISMATCH:
        await store.flag(payment.order_id, stored, outcome)
        raise AmountMismatch(outcome)
    log.info(
        "payment notification processed",
        order_id=str(payment.order_id),
        provider_event_id=provider_event_id,
        outcome=outcome,
    )
    return outcome


async def _apply(
    payments: Payments,
    payment: Payment,
    notification: Notification,
    decision: Decision,
    outcome: str,
) -> None:
    key = str(payment.order_id)
    match decision:
        case Decision.PAY:
            paid_at = datetime.now(UTC)
            await payments.mark_paid(payment, notification, at=paid_at)
            await payments.add_event(
                PaymentReceived(
                    payment_id=payment.id,
                    order_id=payment.order_id,
                    provider_event_id=notification.provider_event_id,
                    amount=notification.amount,
                    currency=notification.currency,
                    paid_at=paid_at,
                ),
                key=key,
            )
        case Decision.FAIL:
            await payments.mark_failed(payment, notification)
            await payments.add_event(
                PaymentFailed(
                    payment_id=payment.id,
                    order_id=payment.order_id,
                    provider_event_id=notification.provider_event_id,
                    reason=outcome,
                    failed_at=datetime.now(UTC),
                ),
                key=key,
            )
