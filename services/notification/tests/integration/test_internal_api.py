"""notification-service's internal API (the operators' reads on its worker's port) on a
real database, served as the worker serves it: the e-mails sent about an order, and about
many (a reconciliation's receipts); a bad query is a 400 that says what is wrong."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator

import httpx
import pytest
from sqlalchemy import insert
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from shop.messaging.testing import operator_port
from shop.notification.adapters.tables import order_notifications
from shop.notification.internal import internal_routes

Sessions = async_sessionmaker[AsyncSession]
TOKEN = "an-operator-token-of-this-test-long-enough"


@pytest.fixture
async def internal(sessions: Sessions) -> AsyncIterator[httpx.AsyncClient]:
    headers = {"Authorization": f"Bearer {TOKEN}"}
    async with (
        operator_port(internal_routes(sessions), token=TOKEN) as url,
        httpx.AsyncClient(base_url=url, headers=headers) as client,
    ):
        yield client


async def sent(sessions: Sessions, order_id: uuid.UUID, kind: str) -> uuid.UUID:
    event_id = uuid.uuid4()
    async with sessions.begin() as session:
        await session.execute(
            insert(order_notifications).values(
                order_id=order_id,
                kind=kind,
                recipient="ana@example.com",
                message_id=f"<{kind}.{order_id}@shop.example>",
                event_id=event_id,
            )
        )
    return event_id


async def test_the_emails_of_an_order_are_read_oldest_first(
    sessions: Sessions, internal: httpx.AsyncClient
) -> None:
    order_id = uuid.uuid4()
    confirmation = await sent(sessions, order_id, "order_confirmation")
    receipt = await sent(sessions, order_id, "payment_receipt")

    reply = await internal.get(f"/internal/v1/orders/{order_id}/emails")

    assert reply.status_code == 200
    emails = reply.json()["emails"]
    assert [(e["kind"], e["event_id"]) for e in emails] == [
        ("order_confirmation", str(confirmation)),
        ("payment_receipt", str(receipt)),
    ]


async def test_the_emails_of_several_orders_are_read_by_kind(
    sessions: Sessions, internal: httpx.AsyncClient
) -> None:
    paid, unpaid = uuid.uuid4(), uuid.uuid4()
    await sent(sessions, paid, "payment_receipt")
    await sent(sessions, unpaid, "order_confirmation")

    reply = await internal.get(
        "/internal/v1/emails", params={"order_ids": f"{paid},{unpaid}", "kind": "payment_receipt"}
    )

    assert [e["order_id"] for e in reply.json()["emails"]] == [str(paid)]


@pytest.mark.parametrize(
    ("path", "params", "named"),
    [
        ("/internal/v1/orders/SK-AAAA-0001/emails", {}, "order_id"),
        ("/internal/v1/emails", {}, "order_ids is required"),
        ("/internal/v1/emails", {"order_ids": "1,2"}, "order_ids"),
    ],
)
async def test_a_query_that_cannot_be_read_is_a_400_naming_the_parameter(
    internal: httpx.AsyncClient, path: str, params: dict[str, str], named: str
) -> None:
    reply = await internal.get(path, params=params)
    assert reply.status_code == 400
    assert named in reply.json()["detail"]


async def test_a_wrong_operator_token_is_refused(sessions: Sessions) -> None:
    async with (
        operator_port(internal_routes(sessions), token=TOKEN) as url,
        httpx.AsyncClient(base_url=url) as client,
    ):
        reply = await client.get("/internal/v1/emails", headers={"Authorization": "Bearer not-it"})
    assert reply.status_code == 401
