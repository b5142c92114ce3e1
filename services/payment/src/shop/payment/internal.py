"""payment-service's internal read API, on its worker's port under ``/internal/v1`` (behind
``SHOP_PAYMENT_OPERATOR_TOKEN``), beside its operator actions (:mod:`shop.payment.operations`):
the payments and the gateway's notifications, its outbox and its inbox. The console and
``shopctl`` read the service through it, never through its tables.

- ``GET /internal/v1/orders/{order}/payments``: the payments opened for an order (its id or
  number), and the gateway's notifications received about it, kept ones included (a
  notification may come before its payment is opened).
- ``GET /internal/v1/payments?created_since=…&updated_before=…&limit=…``: payments opened
  since a time and unchanged since another, oldest first (a reconciliation's).
- ``GET /internal/v1/payments?order_ids=a,b,…``: the payments of those orders.
- ``POST /internal/v1/customers/forget`` ``{"email": …, "order_ids": "a,b,…"}``: the
  gateways' notifications about a customer's orders (their ids from order-service) erased,
  and the dead letters about them no longer naming the address; what changed, in rows
  (:mod:`shop.payment.adapters.forgetting`).
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
    FORGET_CUSTOMER_PATH,
    PREFIX,
    BadQuery,
    answering,
    email_of,
    inbox_route,
    iso,
    limit_of,
    outbox_routes,
    reference_of,
    time_of,
    uuids,
)
from shop.payment.adapters.forgetting import forget_customer
from shop.payment.adapters.tables import payment_events, payments

ORDER_PAYMENTS_PATH: Final = f"{PREFIX}/orders/{{order}}/payments"
PAYMENTS_PATH: Final = f"{PREFIX}/payments"
_MOST: Final = 5000
"""As many payments as a reconciliation checks."""


def payment_document(row: Row[Any]) -> dict[str, Any]:
    return {
        "id": str(row.id),
        "order_id": str(row.order_id),
        "order_number": row.order_number,
        "amount": row.amount,
        "currency": row.currency,
        "status": row.status,
        "provider": row.provider,
        "flagged": row.flagged,
        "reversed_amount": row.reversed_amount,
        "created_at": iso(row.created_at),
        "updated_at": iso(row.updated_at),
        "paid_at": iso(row.paid_at),
    }


def notification_document(row: Row[Any]) -> dict[str, Any]:
    return {
        "provider": row.provider,
        "provider_event_id": row.provider_event_id,
        "type": row.type,
        "meaning": row.meaning,
        "amount": row.amount,
        "currency": row.currency,
        "received_at": iso(row.received_at),
        "processed_at": iso(row.processed_at),
        "outcome": row.outcome,
    }


def _settled(query: Mapping[str, str]) -> Select[Any]:
    """Payments opened since ``created_since``, unchanged since ``updated_before`` (when
    given), oldest first."""
    created_since = time_of(query, "created_since")
    updated_before = time_of(query, "updated_before")
    if created_since is None:
        raise BadQuery("created_since (or order_ids) is required")
    statement = (
        select(payments)
        .where(payments.c.created_at >= created_since)
        .order_by(payments.c.created_at, payments.c.id)
        .limit(limit_of(query, default=_MOST, most=_MOST))
    )
    if updated_before is not None:
        statement = statement.where(payments.c.updated_at < updated_before)
    return statement


def internal_routes(sessions: async_sessionmaker[AsyncSession]) -> list[OperatorRoute]:
    async def of_order(query: Mapping[str, str]) -> dict[str, Any]:
        reference = reference_of(query, "order")
        try:
            order_ids = [uuid.UUID(reference)]
            which = payments.c.order_id == order_ids[0]
        except ValueError:
            order_ids = []
            which = payments.c.order_number == reference.strip().upper()
        async with sessions() as session:
            opened = (await session.execute(select(payments).where(which))).all()
            # Known by its number only once its payment is open: the notifications keep
            # the order's id alone.
            order_ids = order_ids or [row.order_id for row in opened]
            notices = (
                await session.execute(
                    select(payment_events)
                    .where(payment_events.c.order_id.in_(order_ids))
                    .order_by(payment_events.c.id)
                )
            ).all()
        return {
            "payments": [payment_document(row) for row in opened],
            "notifications": [notification_document(notice) for notice in notices],
        }

    async def listed(query: Mapping[str, str]) -> dict[str, Any]:
        if "order_ids" in query:
            statement = select(payments).where(payments.c.order_id.in_(uuids(query, "order_ids")))
        else:
            statement = _settled(query)
        async with sessions() as session:
            rows = (await session.execute(statement)).all()
        return {"payments": [payment_document(row) for row in rows]}

    async def forget(query: Mapping[str, str]) -> dict[str, Any]:
        email, order_ids = email_of(query), uuids(query, "order_ids")
        async with sessions() as session, session.begin():
            forgotten = await forget_customer(session, email, order_ids)
        return {"changed": forgotten.document()}

    return [
        OperatorRoute("GET", ORDER_PAYMENTS_PATH, answering(of_order)),
        OperatorRoute("GET", PAYMENTS_PATH, answering(listed)),
        OperatorRoute("POST", FORGET_CUSTOMER_PATH, answering(forget)),
        *outbox_routes(sessions),
        inbox_route(sessions),
    ]
