"""Cancelling a pending order: one transaction that returns its stock and adds
OrderCancelled to the outbox."""

from __future__ import annotations

import uuid
from collections import Counter
from datetime import UTC, datetime

from shop.contracts import OrderCancelled
from shop.order.domain.customer import Customer
from shop.order.domain.orders import OrderView
from shop.order.domain.status import OrderStatus, check_transition
from shop.order.ports import OrderStore

CUSTOMER_CANCELLED = "cancelled by the customer"


async def cancel_order(store: OrderStore, customer: Customer, order_id: uuid.UUID) -> OrderView:
    """Cancel a pending order of ``customer``: its stock goes back, OrderCancelled goes out.
    Someone else's order is not found; an order no longer pending is refused."""
    async with store.transaction() as orders:
        record = await orders.get(order_id, customer_id=customer.id, for_update=True)
        check_transition(record.view.status, OrderStatus.CANCELLED)
        quantities: Counter[str] = Counter()
        for line in record.view.lines:
            quantities[line.sku] += line.quantity
        await orders.return_stock(quantities)
        cancelled_at = datetime.now(UTC)
        await orders.mark_cancelled(order_id, at=cancelled_at)
        await orders.add_event(
            OrderCancelled(
                **record.event_facts(), reason=CUSTOMER_CANCELLED, cancelled_at=cancelled_at
            ),
            key=str(order_id),
        )
    return record.view.model_copy(update={"status": OrderStatus.CANCELLED})
