"""What the HTTP API tests (``test_api_*.py``) share: request bodies, placing an order that
must succeed, the problem-document check, and looks at the database behind the API."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

import httpx
from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from shop.messaging.schema import outbox
from shop.order.adapters.tables import orders, products

PROBLEM_JSON = "application/problem+json"
TokenFor = Callable[..., str]
Sessions = async_sessionmaker[AsyncSession]


def checkout_body(*lines: tuple[str, int]) -> dict[str, Any]:
    return {"items": [{"sku": sku, "quantity": quantity} for sku, quantity in lines]}


async def place(
    client: httpx.AsyncClient, auth: dict[str, str], *lines: tuple[str, int]
) -> dict[str, Any]:
    """Place an order that must succeed; its JSON."""
    response = await client.post(
        "/v1/orders",
        json=checkout_body(*lines),
        headers={**auth, "Idempotency-Key": str(uuid.uuid4())},
    )
    assert response.status_code == 201, response.text
    order: dict[str, Any] = response.json()
    return order


def assert_problem(response: httpx.Response, status: int, *named: str) -> dict[str, Any]:
    """``response`` is a problem document with ``status`` whose detail names each of
    ``named``; returns the document."""
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == PROBLEM_JSON
    problem: dict[str, Any] = response.json()
    assert problem["status"] == status
    assert problem["title"]
    for name in named:
        assert name in problem["detail"], f"{name!r} not named in {problem['detail']!r}"
    return problem


async def stock_of(sessions: Sessions, sku: str) -> int:
    async with sessions() as session:
        query = select(products.c.stock).where(products.c.sku == sku)
        return int((await session.execute(query)).scalar_one())


async def order_count(sessions: Sessions) -> int:
    async with sessions() as session:
        return int((await session.execute(select(func.count()).select_from(orders))).scalar_one())


async def outbox_types(sessions: Sessions) -> list[str]:
    async with sessions() as session:
        # What goes out at once; the payment deadline each checkout schedules is not an event.
        query = select(outbox.c.message_type).where(outbox.c.due_at.is_(None)).order_by(outbox.c.id)
        return list((await session.execute(query)).scalars())


async def set_status(sessions: Sessions, order_id: str, status: str) -> None:
    async with sessions() as session, session.begin():
        await session.execute(
            orders.update().where(orders.c.id == uuid.UUID(order_id)).values(status=status)
        )
