"""order-service's internal read API, on its worker's port under ``/internal/v1`` (behind
``SHOP_ORDER_OPERATOR_TOKEN``): the orders and what the service knows of each, its outbox
and its inbox. The console and ``shopctl`` read the service through it, never through its
tables. Read-only, but for one thing: an order is changed by its own flows alone, except
that a customer who asked to be forgotten is (:mod:`shop.order.adapters.forgetting`).

- ``GET /internal/v1/orders?q=…&limit=…``: orders whose number contains ``q`` (or whose id
  it is), newest first; the newest ones without ``q``.
- ``GET /internal/v1/orders?ids=a,b,…``: those orders (a reconciliation's).
- ``GET /internal/v1/orders/{order}``: one order by id or number, with its payment
  conflicts (404 when there is none).
- ``POST /internal/v1/customers/orders`` ``{"email": …}``: the ids of the orders placed
  with that address (what the other services are asked to forget of them).
- ``POST /internal/v1/customers/forget`` ``{"email": …, "order_ids": "a,b,…"}``: those of
  that customer's orders no longer say who placed them; what changed, in rows, and the ids
  of the orders still naming the address (placed since they were listed).
- ``GET /internal/v1/outbox``, ``GET /internal/v1/outbox/messages?key=…``,
  ``GET /internal/v1/inbox?event_ids=…``: :mod:`shop.messaging.internal`.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any, Final

from sqlalchemy import Row, Select, select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from shop.messaging import OperatorRoute
from shop.messaging.internal import (
    CUSTOMER_ORDERS_PATH,
    FORGET_CUSTOMER_PATH,
    PREFIX,
    NotFound,
    answering,
    email_of,
    inbox_route,
    iso,
    limit_of,
    outbox_routes,
    reference_of,
    uuids,
)
from shop.order.adapters.forgetting import forget_customer, orders_of
from shop.order.adapters.tables import orders, payment_conflicts

ORDERS_PATH: Final = f"{PREFIX}/orders"
ORDER_PATH: Final = f"{PREFIX}/orders/{{order}}"
_MOST: Final = 200

_SUMMARY = select(
    orders.c.id,
    orders.c.number,
    orders.c.status,
    orders.c.customer_id,
    orders.c.customer_email,
    orders.c.total,
    orders.c.currency,
    orders.c.created_at,
    orders.c.updated_at,
    orders.c.paid_at,
    orders.c.payment_id,
    orders.c.payment_reference,
    orders.c.cancelled_at,
)


def summary(row: Row[Any]) -> dict[str, Any]:
    return {
        "id": str(row.id),
        "number": row.number,
        "status": row.status,
        "customer_id": row.customer_id,
        "customer_email": row.customer_email,
        "total": row.total,
        "currency": row.currency,
        "created_at": iso(row.created_at),
        "updated_at": iso(row.updated_at),
        "paid_at": iso(row.paid_at),
        "payment_id": None if row.payment_id is None else str(row.payment_id),
        "payment_reference": row.payment_reference,
        "cancelled_at": iso(row.cancelled_at),
    }


def _searching(query: Mapping[str, str]) -> Select[Any]:
    if "ids" in query:
        return _SUMMARY.where(orders.c.id.in_(uuids(query, "ids")))
    limit = limit_of(query, default=50, most=_MOST)
    newest = _SUMMARY.order_by(orders.c.created_at.desc(), orders.c.id).limit(limit)
    text = query.get("q", "").strip()
    if not text:
        return newest
    try:
        return _SUMMARY.where(orders.c.id == uuid.UUID(text))
    except ValueError:
        return newest.where(orders.c.number.contains(text.upper(), autoescape=True))


def _by_reference(reference: str) -> Select[Any]:
    """An order by its id, or by its number (``SK-…``, any case)."""
    try:
        return _SUMMARY.where(orders.c.id == uuid.UUID(reference))
    except ValueError:
        return _SUMMARY.where(orders.c.number == reference.strip().upper())


def internal_routes(sessions: async_sessionmaker[AsyncSession]) -> list[OperatorRoute]:
    async def search(query: Mapping[str, str]) -> dict[str, Any]:
        async with sessions() as session:
            rows = (await session.execute(_searching(query))).all()
        return {"orders": [summary(row) for row in rows]}

    async def one(query: Mapping[str, str]) -> dict[str, Any]:
        reference = reference_of(query, "order")
        async with sessions() as session:
            row = (await session.execute(_by_reference(reference))).first()
            if row is None:
                raise NotFound(f"no order {reference!r} in order-service")
            conflicts = (
                await session.execute(
                    select(payment_conflicts)
                    .where(payment_conflicts.c.order_id == row.id)
                    .order_by(payment_conflicts.c.id)
                )
            ).all()
        return {
            "order": summary(row),
            "payment_conflicts": [
                {
                    "payment_id": str(conflict.payment_id),
                    "provider_event_id": conflict.provider_event_id,
                    "order_status": conflict.order_status,
                    "amount": conflict.amount,
                    "currency": conflict.currency,
                    "action": conflict.action,
                    "recorded_at": iso(conflict.recorded_at),
                    "resolved_at": iso(conflict.resolved_at),
                    "resolution": conflict.resolution,
                }
                for conflict in conflicts
            ],
        }

    async def customer_orders(query: Mapping[str, str]) -> dict[str, Any]:
        async with sessions() as session:
            found = await orders_of(session, email_of(query))
        return {"order_ids": [str(order_id) for order_id in found]}

    async def forget(query: Mapping[str, str]) -> dict[str, Any]:
        email = email_of(query)
        listed = uuids(query, "order_ids") if query.get("order_ids", "").strip() else []
        async with sessions() as session, session.begin():
            forgotten = await forget_customer(session, email, listed)
        async with sessions() as session:
            remaining = await orders_of(session, email)
        return {
            "changed": forgotten.document(),
            "remaining_order_ids": [str(order_id) for order_id in remaining],
        }

    return [
        OperatorRoute("GET", ORDERS_PATH, answering(search)),
        OperatorRoute("GET", ORDER_PATH, answering(one)),
        OperatorRoute("POST", CUSTOMER_ORDERS_PATH, answering(customer_orders)),
        OperatorRoute("POST", FORGET_CUSTOMER_PATH, answering(forget)),
        *outbox_routes(sessions),
        inbox_route(sessions),
    ]
