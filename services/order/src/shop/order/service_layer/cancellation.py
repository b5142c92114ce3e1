"""Cancelling a pending order, by its customer or when payment-service expired its payment
(PaymentExpired): one transaction that returns its stock and adds OrderCancelled to the outbox."""

from __future__ import annotations

import uuid
from collections import Counter
from datetime import UTC, datetime
from typing import Any

from shop.contracts import OrderCancelled
from shop.order.domain.customer import Customer
from shop.order.domain.orders import OrderRecord, OrderView
from shop.order.domain.status import OrderStatus, check_transition
from shop.order.ports import Orders, OrderStore

CUSTOMER_CANCELLED = "cancelled by the customer"


PAYMENT_EXPIRED = "payment_expired"


async def cancel_order(store: OrderStore, customer: Customer, order_id: uuid.UUID) -> OrderView:
    """Cancel a pending order of ``customer``: its stock goes back, OrderCancelled goes out.
    Someone else's order is not found; an order no longer pending is refused."""
    async with store.transaction() as orders:
        record = await orders.get(order_id, customer_id=customer.id, for_update=True)
        check_transition(record.view.status, OrderStatus.CANCELLED)
        await _cancel(orders, record, CUSTOMER_CANCELLED)
    return record.view.model_copy(update={"status": OrderStatus.CANCELLED})


async def cancel_unpaid(orders: Orders, order_id: uuid.UUID, log: Any) -> bool:
    """payment-service expired the order's payment: cancel it if it is still pending, in
    the handler's transaction. Paid, or cancelled already, it is left as it is. True when
    it was cancelled now."""
    record = await orders.get(order_id, for_update=True)
    if record.view.status != OrderStatus.PENDING:
        log.info(
            "payment expired; order left as it is",
            order_id=str(order_id),
            status=record.view.status,
        )
        return False
    await _cancel(orders, record, PAYMENT_EXPIRED)
    log.info("order cancelled: not paid in time", order_id=str(order_id))
    return True


async def _cancel(orders: Orders, record: OrderRecord, reason: str) -> None:
    quantities: Counter[str] = Counter()
    for line in record.view.lines:
        quantities[line.sku] += line.quantity
    await orders.return_stock(quantities)
    cancelled_at = datetime.now(UTC)
    await orders.mark_cancelled(record.view.id, at=cancelled_at)
    await orders.add_event(
        OrderCancelled(**record.event_facts(), reason=reason, cancelled_at=cancelled_at),
        key=str(record.view.id),
    )
