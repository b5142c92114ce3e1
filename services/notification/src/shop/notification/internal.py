"""notification-service's internal read API, on its worker's port under ``/internal/v1``
(behind ``SHOP_NOTIFICATION_OPERATOR_TOKEN``): the e-mails it has sent. The console and
``shopctl`` read the service through it, never through its tables. It keeps no outbox (it
publishes nothing) and no inbox (each e-mail is its own record, marked after the send).

- ``GET /internal/v1/orders/{order_id}/emails``: the e-mails sent about an order, oldest
  first.
- ``GET /internal/v1/emails?order_ids=a,b,…[&kind=…]``: the e-mails sent about those orders
  (of one kind, ``payment_receipt`` say: a reconciliation's).
- ``POST /internal/v1/customers/forget`` ``{"email": …, "order_ids": "a,b,…"}``: the
  records of the e-mails sent to that address, and the dead letters about those orders, no
  longer name it; what changed, in rows (:mod:`shop.notification.adapters.forgetting`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from sqlalchemy import Row, select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from shop.messaging import OperatorRoute
from shop.messaging.internal import (
    FORGET_CUSTOMER_PATH,
    PREFIX,
    answering,
    as_uuid,
    email_of,
    iso,
    required,
    uuids,
)
from shop.notification.adapters.forgetting import forget_customer
from shop.notification.adapters.tables import order_notifications

ORDER_EMAILS_PATH: Final = f"{PREFIX}/orders/{{order_id}}/emails"
EMAILS_PATH: Final = f"{PREFIX}/emails"


def email_document(row: Row[Any]) -> dict[str, Any]:
    return {
        "order_id": str(row.order_id),
        "kind": row.kind,
        "reference": row.reference,
        "recipient": row.recipient,
        "message_id": row.message_id,
        "event_id": str(row.event_id),
        "sent_at": iso(row.sent_at),
    }


def internal_routes(sessions: async_sessionmaker[AsyncSession]) -> list[OperatorRoute]:
    async def of_order(query: Mapping[str, str]) -> dict[str, Any]:
        order_id = as_uuid("order_id", required(query, "order_id"))
        statement = (
            select(order_notifications)
            .where(order_notifications.c.order_id == order_id)
            .order_by(order_notifications.c.sent_at)
        )
        async with sessions() as session:
            rows = (await session.execute(statement)).all()
        return {"emails": [email_document(row) for row in rows]}

    async def of_orders(query: Mapping[str, str]) -> dict[str, Any]:
        statement = select(order_notifications).where(
            order_notifications.c.order_id.in_(uuids(query, "order_ids"))
        )
        if query.get("kind"):
            statement = statement.where(order_notifications.c.kind == query["kind"])
        async with sessions() as session:
            rows = (await session.execute(statement.order_by(order_notifications.c.sent_at))).all()
        return {"emails": [email_document(row) for row in rows]}

    async def forget(query: Mapping[str, str]) -> dict[str, Any]:
        email = email_of(query)
        listed = uuids(query, "order_ids") if query.get("order_ids", "").strip() else []
        async with sessions() as session, session.begin():
            forgotten = await forget_customer(session, email, listed)
        return {"changed": forgotten.document()}

    return [
        OperatorRoute("GET", ORDER_EMAILS_PATH, answering(of_order)),
        OperatorRoute("GET", EMAILS_PATH, answering(of_orders)),
        OperatorRoute("POST", FORGET_CUSTOMER_PATH, answering(forget)),
    ]
