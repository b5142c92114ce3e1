"""A payment arrives: a pending order for that amount becomes paid and OrderPaid goes out,
in the handler's transaction. Any other payment is recorded for a person, never forced."""

from __future__ import annotations

from typing import Any

from shop.contracts import OrderPaid, PaymentReceived
from shop.order.domain.payments import PaymentConflict, payment_conflict
from shop.order.ports import Orders


async def mark_paid(orders: Orders, payment: PaymentReceived, log: Any) -> None:
    """pending → paid with OrderPaid, or the payment kept in ``payment_conflicts`` (a
    refund due for a cancelled order, a duplicate payment, an amount that differs) and
    logged as a warning. An order that does not exist is
    :class:`~shop.order.domain.errors.OrderNotFound`."""
    record = await orders.get(payment.order_id, for_update=True)
    order = record.view
    conflict = payment_conflict(order, amount=payment.amount, currency=payment.currency)
    if conflict is not None:
        await orders.record_conflict(payment, order_status=order.status, conflict=conflict)
        log.warning(
            "payment not applied: " + conflict.value.replace("_", " "),
            order_id=str(order.id),
            payment_id=str(payment.payment_id),
            order_status=order.status,
            amount=payment.amount,
            order_total=order.total,
            action=conflict.value,
        )
        if conflict == PaymentConflict.REFUND_DUE:
            await _end_if_given_back(orders, payment, log)
        return
    await orders.mark_paid(payment)
    await orders.add_event(
        OrderPaid(
            **record.event_facts(),
            payment_id=payment.payment_id,
            payment_reference=payment.provider_event_id,
            paid_at=payment.paid_at,
        ),
        key=str(order.id),
    )
    log.info("order paid", order_id=str(order.id))


async def _end_if_given_back(orders: Orders, payment: PaymentReceived, log: Any) -> None:
    """PaymentReversed and PaymentReceived travel on different topics, so a late payment's
    refund can be recorded before the payment is: its ``refund_due`` ends at once then."""
    furthest = await orders.furthest_reversal(payment.order_id, payment.payment_id)
    if furthest is None or furthest.reversed_total < payment.amount:
        return
    await orders.resolve_conflicts(
        payment.order_id,
        PaymentConflict.REFUND_DUE,
        resolution=furthest.resolution,
        at=furthest.reversed_at,
    )
    log.info("late payment given back already", order_id=str(payment.order_id))
