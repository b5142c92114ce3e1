"""What order-service does when other services' events arrive."""

from __future__ import annotations

from sqlalchemy import func, insert, select, update

from shop.contracts import ConsumerGroup, OrderPaid, PaymentReceived
from shop.messaging import MessageContext, PermanentError, Router, add
from shop.order.adapters.tables import orders, payment_conflicts
from shop.order.domain.status import OrderStatus
from shop.order.queries import load_order_record

router = Router(ConsumerGroup.ORDER)


@router.subscriber(PaymentReceived)
async def mark_order_paid(event: PaymentReceived, ctx: MessageContext) -> None:
    """pending → paid, with OrderPaid in the same transaction. An order no longer pending
    (cancelled, already paid) or whose total differs is never forced: the payment is
    recorded in ``payment_conflicts`` and logged for a person to settle."""
    paid = (
        await ctx.db.execute(
            update(orders)
            .where(
                orders.c.id == event.order_id,
                orders.c.status == OrderStatus.PENDING,
                orders.c.total == event.amount,
                orders.c.currency == event.currency,
            )
            .values(
                status=OrderStatus.PAID,
                paid_at=event.paid_at,
                payment_id=event.payment_id,
                payment_reference=event.provider_event_id,
                updated_at=func.now(),
            )
            .returning(orders.c.id)
        )
    ).first()
    if paid is not None:
        record = await load_order_record(ctx.db, event.order_id)
        await add(
            ctx.db,
            OrderPaid(
                **record.event_facts(),
                payment_id=event.payment_id,
                payment_reference=event.provider_event_id,
                paid_at=event.paid_at,
            ),
            key=str(event.order_id),
        )
        ctx.log.info("order paid", order_id=str(event.order_id))
        return
    await _record_conflict(event, ctx)


async def _record_conflict(event: PaymentReceived, ctx: MessageContext) -> None:
    order = (
        await ctx.db.execute(
            select(orders.c.status, orders.c.total, orders.c.currency).where(
                orders.c.id == event.order_id
            )
        )
    ).first()
    if order is None:
        raise PermanentError(f"payment {event.payment_id} names no known order {event.order_id}")
    if order.status == OrderStatus.CANCELLED:
        action = "refund_due"
    elif order.status != OrderStatus.PENDING:
        action = "duplicate_payment"
    else:
        action = "amount_mismatch"
    await ctx.db.execute(
        insert(payment_conflicts).values(
            order_id=event.order_id,
            payment_id=event.payment_id,
            provider_event_id=event.provider_event_id,
            order_status=order.status,
            amount=event.amount,
            currency=event.currency,
            action=action,
        )
    )
    ctx.log.warning(
        "payment not applied: " + action.replace("_", " "),
        order_id=str(event.order_id),
        payment_id=str(event.payment_id),
        order_status=order.status,
        amount=event.amount,
        order_total=order.total,
        action=action,
    )
