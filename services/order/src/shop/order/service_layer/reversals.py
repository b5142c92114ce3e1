"""Money paid for an order went back (PaymentReversed, one event per reversal): the order
moves as :mod:`shop.order.domain.reversals` says, the reversal is kept on it, and
OrderPaymentReversed goes out, in the handler's transaction. A reversal whose reference is
recorded already changes nothing."""

from __future__ import annotations

from typing import Any

from shop.contracts import OrderPaymentReversed, PaymentReversed
from shop.order.domain.errors import InvalidTransition
from shop.order.domain.payments import PaymentConflict
from shop.order.domain.reversals import RecordedReversal, after_reversal
from shop.order.ports import Orders


async def record_reversal(orders: Orders, reversal: PaymentReversed, log: Any) -> bool:
    """Apply ``reversal`` to its order; True when it changed anything. A pending order is
    :class:`~shop.order.domain.reversals.ReversalOfUnpaidOrder`, an unknown one
    :class:`~shop.order.domain.errors.OrderNotFound`."""
    record = await orders.get(reversal.order_id, for_update=True)
    order = record.view
    try:
        outcome = after_reversal(
            order.status,
            kind=reversal.kind,
            reversed_total=reversal.reversed_total,
            paid_amount=reversal.paid_amount,
        )
    except InvalidTransition:
        # Refunded or charged back already (a chargeback after a full refund): the money
        # moved, so it is kept, but the order stays as it is.
        outcome = None
    status = order.status if outcome is None else outcome.status
    if not await orders.record_reversal(reversal, status=status):
        log.info(
            "payment reversal recorded already",
            order_id=str(order.id),
            reference=reversal.reference,
        )
        return False
    if outcome is None:
        log.warning(
            "payment reversed for an order that is " + order.status.replace("_", " "),
            order_id=str(order.id),
            reference=reversal.reference,
            kind=reversal.kind,
            amount=reversal.amount,
        )
        return True
    if outcome.status != order.status:
        await orders.mark_reversed(order.id, outcome.status)
    if outcome.resolves_refund_due:
        ended = await orders.resolve_conflicts(
            order.id,
            PaymentConflict.REFUND_DUE,
            resolution=RecordedReversal.of(reversal).resolution,
            at=reversal.reversed_at,
        )
        log.info("late payment given back", order_id=str(order.id), conflicts_ended=ended)
    await orders.add_event(
        OrderPaymentReversed(
            **record.event_facts(),
            kind=reversal.kind,
            reference=reversal.reference,
            amount=reversal.amount,
            reversed_total=reversal.reversed_total,
            status=outcome.status,
            reversed_at=reversal.reversed_at,
        ),
        key=str(order.id),
    )
    log.info(
        "order payment reversed",
        order_id=str(order.id),
        kind=reversal.kind,
        status=outcome.status,
    )
    return True
