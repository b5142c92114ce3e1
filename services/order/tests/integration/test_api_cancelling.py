"""The HTTP API on a real database: cancelling a pending order releases its stock and
records OrderCancelled; cancelling any other order is a problem document and changes nothing."""

from __future__ import annotations

import uuid

import httpx
import pytest
from sqlalchemy import select

from shop.contracts import decode
from shop.messaging.schema import outbox

from .api_helpers import Sessions, assert_problem, outbox_types, place, set_status, stock_of


async def test_cancelling_a_pending_order_releases_its_stock_and_records_order_cancelled(
    client: httpx.AsyncClient, auth: dict[str, str], sessions: Sessions
) -> None:
    before = {sku: await stock_of(sessions, sku) for sku in ("SERUM-RET-30", "MASK-CLAY-100")}
    order = await place(client, auth, ("SERUM-RET-30", 3), ("MASK-CLAY-100", 2))
    assert await stock_of(sessions, "SERUM-RET-30") == before["SERUM-RET-30"] - 3

    response = await client.post(f"/v1/orders/{order['id']}/cancel", headers=auth)
    assert response.status_code == 200, response.text
    assert response.json()["status"] == "cancelled"
    assert response.json()["id"] == order["id"]
    assert {sku: await stock_of(sessions, sku) for sku in before} == before

    async with sessions() as session:
        rows = (
            await session.execute(
                select(outbox.c.message_type, outbox.c.key, outbox.c.body)
                .where(outbox.c.due_at.is_(None))
                .order_by(outbox.c.id)
            )
        ).all()
    assert [row.message_type for row in rows] == ["order.created", "order.cancelled"]
    cancelled = rows[1]
    assert cancelled.key == order["id"]
    event = decode(cancelled.body)
    assert event.type == "order.cancelled"
    assert str(event.payload.order_id) == order["id"]  # type: ignore[attr-defined]
    assert event.payload.total == order["total"]  # type: ignore[attr-defined]

    again = await client.get(f"/v1/orders/{order['id']}", headers=auth)
    assert again.json()["status"] == "cancelled"


@pytest.mark.parametrize("status", ["paid", "fulfilled"])
async def test_cancelling_an_order_that_is_no_longer_pending_is_409_naming_its_status(
    client: httpx.AsyncClient, auth: dict[str, str], sessions: Sessions, status: str
) -> None:
    order = await place(client, auth, ("ESSENCE-SNAIL-100", 1))
    await set_status(sessions, order["id"], status)
    stock = await stock_of(sessions, "ESSENCE-SNAIL-100")

    response = await client.post(f"/v1/orders/{order['id']}/cancel", headers=auth)
    problem = assert_problem(response, 409, status)
    assert problem["status_now"] == status
    assert await stock_of(sessions, "ESSENCE-SNAIL-100") == stock
    assert await outbox_types(sessions) == ["order.created"]


async def test_cancelling_a_cancelled_order_again_is_409_and_releases_nothing_twice(
    client: httpx.AsyncClient, auth: dict[str, str], sessions: Sessions
) -> None:
    before = await stock_of(sessions, "MOIST-GEL-50")
    order = await place(client, auth, ("MOIST-GEL-50", 4))
    first = await client.post(f"/v1/orders/{order['id']}/cancel", headers=auth)
    assert first.status_code == 200

    again = await client.post(f"/v1/orders/{order['id']}/cancel", headers=auth)
    assert_problem(again, 409, "cancelled")
    assert await stock_of(sessions, "MOIST-GEL-50") == before
    assert await outbox_types(sessions) == ["order.created", "order.cancelled"]


async def test_cancelling_an_order_that_does_not_exist_is_404(
    client: httpx.AsyncClient, auth: dict[str, str]
) -> None:
    missing = uuid.uuid4()
    response = await client.post(f"/v1/orders/{missing}/cancel", headers=auth)
    assert_problem(response, 404, str(missing))
