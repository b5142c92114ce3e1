"""The HTTP API on a real database: a customer reads only their own orders, newest first,
page by page; a bad order id, cursor or limit is a problem document naming it."""

from __future__ import annotations

import base64

import httpx
import pytest

from .api_helpers import Sessions, TokenFor, assert_problem, outbox_types, place, stock_of


async def test_another_customers_order_is_404_to_get_and_to_cancel(
    client: httpx.AsyncClient, auth: dict[str, str], token_for: TokenFor, sessions: Sessions
) -> None:
    order = await place(client, auth, ("SERUM-VITC-20", 2))
    stock = await stock_of(sessions, "SERUM-VITC-20")
    intruder = {"Authorization": f"Bearer {token_for('cust_budi', 'budi@example.com')}"}

    got = await client.get(f"/v1/orders/{order['id']}", headers=intruder)
    assert_problem(got, 404, order["id"])
    cancelled = await client.post(f"/v1/orders/{order['id']}/cancel", headers=intruder)
    assert_problem(cancelled, 404, order["id"])

    mine = await client.get(f"/v1/orders/{order['id']}", headers=auth)
    assert mine.status_code == 200
    assert mine.json()["status"] == "pending"
    assert await stock_of(sessions, "SERUM-VITC-20") == stock
    assert await outbox_types(sessions) == ["order.created"]


async def test_an_order_id_that_is_not_a_uuid_is_422_naming_the_path_parameter(
    client: httpx.AsyncClient, auth: dict[str, str]
) -> None:
    response = await client.get("/v1/orders/12345", headers=auth)
    assert_problem(response, 422, "path.order_id")


async def test_the_callers_orders_come_newest_first_two_at_a_time(
    client: httpx.AsyncClient, auth: dict[str, str], token_for: TokenFor
) -> None:
    placed = [(await place(client, auth, ("LIP-BALM-10", n)))["id"] for n in range(1, 6)]
    others = {"Authorization": f"Bearer {token_for('cust_budi', 'budi@example.com')}"}
    await place(client, others, ("LIP-BALM-10", 1))

    pages: list[list[str]] = []
    cursor: str | None = None
    while True:
        params: dict[str, str | int] = {"limit": 2}
        if cursor is not None:
            params["cursor"] = cursor
        response = await client.get("/v1/orders", params=params, headers=auth)
        assert response.status_code == 200, response.text
        page = response.json()
        pages.append([order["id"] for order in page["orders"]])
        cursor = page["next_cursor"]
        if cursor is None:
            break
        assert len(pages) < 4, "pagination does not end"

    newest_first = list(reversed(placed))
    assert pages == [newest_first[0:2], newest_first[2:4], newest_first[4:5]]


async def test_an_empty_order_list_has_no_next_cursor(
    client: httpx.AsyncClient, auth: dict[str, str]
) -> None:
    response = await client.get("/v1/orders", headers=auth)
    assert response.status_code == 200
    assert response.json() == {"orders": [], "next_cursor": None}


@pytest.mark.parametrize(
    "cursor",
    [
        "garbage!",
        "bm90LWEtY3Vyc29y",  # base64 of "not-a-cursor"
        base64.urlsafe_b64encode(b"yesterday|not-a-uuid").decode(),
        base64.urlsafe_b64encode(
            b"0001-01-01T00:00:00+01:00|b1284646-de18-4171-ae6b-d4cb4c7bd085"
        ).decode(),
        base64.urlsafe_b64encode(
            b"2026-12-01T00:00:00|b1284646-de18-4171-ae6b-d4cb4c7bd085"
        ).decode(),
    ],
    ids=["not-base64", "no-separator", "bad-fields", "before-the-calendar", "no-timezone"],
)
async def test_a_cursor_this_service_did_not_hand_out_is_400_naming_the_cursor(
    client: httpx.AsyncClient, auth: dict[str, str], cursor: str
) -> None:
    response = await client.get("/v1/orders", params={"cursor": cursor}, headers=auth)
    assert_problem(response, 400, "cursor")


@pytest.mark.parametrize("limit", ["0", "101", "-5", "ten"])
async def test_a_limit_out_of_range_is_422_naming_the_query_parameter(
    client: httpx.AsyncClient, auth: dict[str, str], limit: str
) -> None:
    response = await client.get("/v1/orders", params={"limit": limit}, headers=auth)
    assert_problem(response, 422, "query.limit")
