"""Cancelling a pending order: one transaction that returns its stock and writes
OrderCancelled to the outbox."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

from sqlalchemy import bindparam, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from shop.contracts import OrderCancelled
from shop.messaging import add
from shop.order.adapters.tables import order_items, orders, products
from shop.order.domain.customer import Customer
from shop.order.domain.errors import OrderNotFound
from shop.order.domain.status import OrderStatus, check_transition
from shop.order.queries import load_order_record
from shop.order.views import OrderView


async def cancel_order(session: AsyncSession, customer: Customer, order_id: uuid.UUID) -> OrderView:
    """Cancel a pending order of ``customer``: its stock goes back, OrderCancelled goes out."""
    row = (
        await session.execute(
            select(orders.c.status)
            .where(orders.c.id == order_id, orders.c.customer_id == customer.id)
            .with_for_update()
        )
    ).first()
    if row is None:
        raise OrderNotFound(order_id)
    check_transition(OrderStatus(row.status), OrderStatus.CANCELLED)
    items = (
        await session.execute(
            select(order_items.c.sku, order_items.c.quantity)
            .where(order_items.c.order_id == order_id)
            .order_by(order_items.c.sku)
        )
    ).all()
    await session.execute(
        update(products)
        .where(products.c.sku == bindparam("b_sku"))
        .values(stock=products.c.stock + bindparam("b_quantity")),
        [{"b_sku": item.sku, "b_quantity": item.quantity} for item in items],
    )
    cancelled_at = datetime.now(UTC)
    await session.execute(
        update(orders)
        .where(orders.c.id == order_id)
        .values(status=OrderStatus.CANCELLED, cancelled_at=cancelled_at, updated_at=cancelled_at)
    )
    record = await load_order_record(session, order_id)
    await add(
        session,
        OrderCancelled(
            **record.event_facts(),
            reason="cancelled by the customer",
            cancelled_at=cancelled_at,
        ),
        key=str(order_id),
    )
    return record.view
