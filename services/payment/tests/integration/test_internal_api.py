"""payment-service's internal API (the operators' reads on its worker's port) on a real
database, served as the worker serves it: an order's payments with the gateway's
notifications, the payments a reconciliation holds against the orders, the outbox; a bad
query is a 400 that says what is wrong, never an error of the server."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta

import httpx
import pytest
from sqlalchemy import insert
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from shop.messaging.testing import operator_port
from shop.payment.adapters.tables import payment_events, payments
from shop.payment.internal import internal_routes

Sessions = async_sessionmaker[AsyncSession]


@pytest.fixture
async def internal(sessions: Sessions) -> AsyncIterator[httpx.AsyncClient]:
    async with (
        operator_port(internal_routes(sessions)) as url,
        httpx.AsyncClient(base_url=url) as client,
    ):
        yield client


async def opened(sessions: Sessions, number: str) -> uuid.UUID:
    order_id = uuid.uuid4()
    async with sessions.begin() as session:
        await session.execute(
            insert(payments).values(
                id=uuid.uuid4(),
                order_id=order_id,
                order_number=number,
                amount=150_000,
                currency="IDR",
                status="pending",
            )
        )
        await session.execute(
            insert(payment_events).values(
                provider="shop",
                provider_event_id=f"evt-{number}",
                type="payment.succeeded",
                raw_body=b"{}",
                meaning="paid",
                order_id=order_id,
                amount=150_000,
                currency="IDR",
                provider_payment_id="pay-1",
            )
        )
    return order_id


async def test_an_orders_payment_is_read_by_order_id_or_number_with_its_notifications(
    sessions: Sessions, internal: httpx.AsyncClient
) -> None:
    order_id = await opened(sessions, "SK-AAAA-0001")

    by_id = await internal.get(f"/internal/v1/orders/{order_id}/payments")
    by_number = await internal.get("/internal/v1/orders/sk-aaaa-0001/payments")

    assert by_id.status_code == 200
    assert by_id.json() == by_number.json()
    [payment] = by_id.json()["payments"]
    [notice] = by_id.json()["notifications"]
    assert (payment["order_id"], payment["amount"], payment["status"]) == (
        str(order_id),
        150_000,
        "pending",
    )
    assert (notice["provider_event_id"], notice["meaning"]) == ("evt-SK-AAAA-0001", "paid")


async def test_an_order_without_a_payment_has_none(internal: httpx.AsyncClient) -> None:
    reply = await internal.get(f"/internal/v1/orders/{uuid.uuid4()}/payments")
    assert (reply.status_code, reply.json()) == (200, {"payments": [], "notifications": []})


async def test_a_notification_kept_before_its_payment_is_opened_is_read_by_the_orders_id(
    sessions: Sessions, internal: httpx.AsyncClient
) -> None:
    order_id = uuid.uuid4()
    async with sessions.begin() as session:
        await session.execute(
            insert(payment_events).values(
                provider="shop",
                provider_event_id="evt-early",
                type="payment.succeeded",
                raw_body=b"{}",
                meaning="paid",
                order_id=order_id,
                amount=150_000,
                currency="IDR",
                provider_payment_id="pay-early",
            )
        )

    found = (await internal.get(f"/internal/v1/orders/{order_id}/payments")).json()

    assert found["payments"] == []
    assert [n["provider_event_id"] for n in found["notifications"]] == ["evt-early"]
    assert found["notifications"][0]["outcome"] is None


async def test_payments_are_listed_by_when_they_were_opened_and_last_changed(
    sessions: Sessions, internal: httpx.AsyncClient
) -> None:
    before = datetime.now(UTC) - timedelta(minutes=1)
    order_id = await opened(sessions, "SK-AAAA-0002")
    after = datetime.now(UTC) + timedelta(minutes=1)

    settled = await internal.get(
        "/internal/v1/payments",
        params={"created_since": before.isoformat(), "updated_before": after.isoformat()},
    )
    too_recent = await internal.get(
        "/internal/v1/payments",
        params={"created_since": before.isoformat(), "updated_before": before.isoformat()},
    )

    assert [p["order_id"] for p in settled.json()["payments"]] == [str(order_id)]
    assert too_recent.json() == {"payments": []}


async def test_payments_are_listed_by_their_orders(
    sessions: Sessions, internal: httpx.AsyncClient
) -> None:
    order_id = await opened(sessions, "SK-AAAA-0003")
    listed = await internal.get(
        "/internal/v1/payments", params={"order_ids": f"{order_id},{uuid.uuid4()}"}
    )
    assert [p["order_number"] for p in listed.json()["payments"]] == ["SK-AAAA-0003"]


async def test_the_outbox_status_answers(internal: httpx.AsyncClient) -> None:
    status = await internal.get("/internal/v1/outbox")
    assert status.status_code == 200
    assert status.json()["unsent"] >= 0


@pytest.mark.parametrize(
    ("params", "named"),
    [
        ({}, "created_since (or order_ids) is required"),
        ({"created_since": "yesterday"}, "created_since"),
        ({"created_since": "2026-12-01T00:00:00"}, "time zone"),
        ({"created_since": "2026-12-01T00:00:00Z", "limit": "-1"}, "limit"),
    ],
)
async def test_a_query_that_cannot_be_read_is_a_400_naming_the_parameter(
    internal: httpx.AsyncClient, params: dict[str, str], named: str
) -> None:
    reply = await internal.get("/internal/v1/payments", params=params)
    assert reply.status_code == 400
    assert named in reply.json()["detail"]
