"""The HTTP API on a real database: every bad input is a 4xx problem document that names
what is wrong, and the read, cancel and operations endpoints answer as documented."""

from __future__ import annotations

import base64
import uuid
from collections.abc import AsyncIterator, Callable
from datetime import timedelta
from typing import Any

import httpx
import jwt
import pytest
from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from shop.contracts import decode
from shop.messaging.schema import outbox
from shop.order.adapters.tables import orders, products
from shop.order.catalogue import SEED_PRODUCTS
from shop.order.domain.money import MAX_LINE_QUANTITY
from shop.order.settings import OrderSettings

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
    return response.json()  # type: ignore[no-any-return]


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
        query = select(outbox.c.message_type).order_by(outbox.c.id)
        return list((await session.execute(query)).scalars())


async def set_status(sessions: Sessions, order_id: str, status: str) -> None:
    async with sessions() as session, session.begin():
        await session.execute(
            orders.update().where(orders.c.id == uuid.UUID(order_id)).values(status=status)
        )


@pytest.fixture
def order_headers(auth: dict[str, str]) -> dict[str, str]:
    return {**auth, "Idempotency-Key": str(uuid.uuid4())}


# --- authentication -----------------------------------------------------------------------


async def test_a_missing_token_is_401_naming_the_authorization_header(
    client: httpx.AsyncClient,
) -> None:
    response = await client.post(
        "/v1/orders",
        json=checkout_body(("SERUM-NIA-30", 1)),
        headers={"Idempotency-Key": "no-token"},
    )
    assert_problem(response, 401, "Authorization")
    assert response.headers["www-authenticate"] == "Bearer"


async def test_a_token_of_another_scheme_is_401(client: httpx.AsyncClient) -> None:
    response = await client.get("/v1/orders", headers={"Authorization": "Basic YXl1OnB3"})
    assert_problem(response, 401, "Bearer")


@pytest.mark.parametrize(
    "token",
    [
        pytest.param("not-a-jwt", id="garbage"),
        pytest.param(
            jwt.encode(
                {"sub": "cust_ayu", "email": "ayu@example.com", "exp": 4102444800},
                "a-secret-the-service-does-not-know",
                algorithm="HS256",
            ),
            id="wrong-key",
        ),
        pytest.param(
            jwt.encode({"sub": "cust_ayu", "email": "ayu@example.com"}, None, algorithm="none"),
            id="unsigned",
        ),
    ],
)
async def test_an_invalid_token_is_401_saying_so(client: httpx.AsyncClient, token: str) -> None:
    response = await client.get("/v1/orders", headers={"Authorization": f"Bearer {token}"})
    assert_problem(response, 401, "invalid token")
    assert response.headers["www-authenticate"] == "Bearer"


async def test_a_token_without_a_valid_email_claim_is_401_naming_the_claim(
    client: httpx.AsyncClient, token_for: TokenFor
) -> None:
    token = token_for(email="not-an-address")
    response = await client.get("/v1/orders", headers={"Authorization": f"Bearer {token}"})
    assert_problem(response, 401, "email")


@pytest.mark.parametrize(
    "subject", ["", "cust\x00ayu", "cust\nayu", "c" * 201], ids=["empty", "nul", "newline", "long"]
)
async def test_a_token_whose_sub_names_no_customer_is_401_naming_the_claim(
    client: httpx.AsyncClient, token_for: TokenFor, subject: str
) -> None:
    token = token_for(customer_id=subject)
    response = await client.get("/v1/orders", headers={"Authorization": f"Bearer {token}"})
    assert_problem(response, 401, "sub")


async def test_an_expired_token_is_401_saying_it_expired(
    client: httpx.AsyncClient, token_for: TokenFor, sessions: Sessions
) -> None:
    token = token_for(valid_for=timedelta(minutes=-1))
    response = await client.post(
        "/v1/orders",
        json=checkout_body(("SERUM-NIA-30", 1)),
        headers={"Authorization": f"Bearer {token}", "Idempotency-Key": "expired"},
    )
    assert_problem(response, 401, "expired")
    assert await order_count(sessions) == 0


# --- checkout input -----------------------------------------------------------------------


async def test_a_missing_idempotency_key_is_400_naming_the_header(
    client: httpx.AsyncClient, auth: dict[str, str], sessions: Sessions
) -> None:
    response = await client.post(
        "/v1/orders", json=checkout_body(("SERUM-NIA-30", 1)), headers=auth
    )
    assert_problem(response, 400, "Idempotency-Key")
    assert await order_count(sessions) == 0


async def test_the_missing_idempotency_key_is_named_first_even_beside_a_bad_body(
    client: httpx.AsyncClient, auth: dict[str, str]
) -> None:
    response = await client.post("/v1/orders", json={"items": []}, headers=auth)
    problem = assert_problem(response, 400, "Idempotency-Key", "body.items")
    assert problem["detail"].startswith("the Idempotency-Key header is required")


@pytest.mark.parametrize("key", ["has space", "x" * 201, ""], ids=["space", "too-long", "empty"])
async def test_a_malformed_idempotency_key_is_4xx_naming_the_header(
    client: httpx.AsyncClient, auth: dict[str, str], sessions: Sessions, key: str
) -> None:
    response = await client.post(
        "/v1/orders",
        json=checkout_body(("SERUM-NIA-30", 1)),
        headers={**auth, "Idempotency-Key": key},
    )
    assert_problem(response, 422, "header.Idempotency-Key")
    assert await order_count(sessions) == 0


async def test_an_unknown_sku_is_422_naming_the_sku_and_reserves_nothing(
    client: httpx.AsyncClient, order_headers: dict[str, str], sessions: Sessions
) -> None:
    before = await stock_of(sessions, "SERUM-NIA-30")
    response = await client.post(
        "/v1/orders",
        json=checkout_body(("SERUM-NIA-30", 1), ("NO-SUCH-CREAM", 1)),
        headers=order_headers,
    )
    problem = assert_problem(response, 422, "NO-SUCH-CREAM")
    assert problem["skus"] == ["NO-SUCH-CREAM"]
    assert await stock_of(sessions, "SERUM-NIA-30") == before
    assert await order_count(sessions) == 0
    assert await outbox_types(sessions) == []


@pytest.mark.parametrize(
    "quantity",
    [0, -1, MAX_LINE_QUANTITY + 1, 10**9, 10**30],
    ids=["zero", "negative", "just-over-the-limit", "billion", "beyond-int64"],
)
async def test_a_quantity_out_of_range_is_422_naming_the_field(
    client: httpx.AsyncClient, order_headers: dict[str, str], sessions: Sessions, quantity: int
) -> None:
    response = await client.post(
        "/v1/orders",
        json=checkout_body(("SERUM-NIA-30", 1), ("SUN-SPF50-50", quantity)),
        headers=order_headers,
    )
    problem = assert_problem(response, 422, "body.items.1.quantity")
    assert [error["field"] for error in problem["errors"]] == ["body.items.1.quantity"]
    assert await order_count(sessions) == 0


async def test_a_quantity_that_is_not_an_integer_is_422_naming_the_field(
    client: httpx.AsyncClient, order_headers: dict[str, str]
) -> None:
    body = {"items": [{"sku": "SERUM-NIA-30", "quantity": "2"}]}
    response = await client.post("/v1/orders", json=body, headers=order_headers)
    assert_problem(response, 422, "body.items.0.quantity")


async def test_an_order_without_lines_is_422_naming_the_items_field(
    client: httpx.AsyncClient, order_headers: dict[str, str], sessions: Sessions
) -> None:
    response = await client.post("/v1/orders", json={"items": []}, headers=order_headers)
    assert_problem(response, 422, "body.items")
    assert await order_count(sessions) == 0


async def test_a_body_without_items_is_422_naming_the_missing_field(
    client: httpx.AsyncClient, order_headers: dict[str, str]
) -> None:
    response = await client.post("/v1/orders", json={"lines": []}, headers=order_headers)
    assert_problem(response, 422, "body.items")


async def test_two_lines_of_one_product_are_422_naming_the_sku(
    client: httpx.AsyncClient, order_headers: dict[str, str], sessions: Sessions
) -> None:
    response = await client.post(
        "/v1/orders",
        json=checkout_body(("SERUM-NIA-30", 1), ("TONER-HA-150", 1), ("SERUM-NIA-30", 2)),
        headers=order_headers,
    )
    problem = assert_problem(response, 422, "SERUM-NIA-30", "body.items")
    assert [error["field"] for error in problem["errors"]] == ["body.items"]
    assert await order_count(sessions) == 0


async def test_a_malformed_json_body_is_422_naming_the_body(
    client: httpx.AsyncClient, order_headers: dict[str, str]
) -> None:
    response = await client.post(
        "/v1/orders",
        content=b'{"items": [',
        headers={**order_headers, "Content-Type": "application/json"},
    )
    assert_problem(response, 422, "JSON")


async def test_an_oversize_body_is_413_naming_the_limit(
    client: httpx.AsyncClient, order_headers: dict[str, str], order_settings: OrderSettings
) -> None:
    limit = order_settings.max_body_bytes
    body = {"items": [{"sku": "SERUM-NIA-30", "quantity": 1}], "padding": "x" * limit}
    response = await client.post("/v1/orders", json=body, headers=order_headers)
    assert_problem(response, 413, str(limit))


async def test_an_oversize_body_without_a_content_length_is_413_too(
    client: httpx.AsyncClient,
    order_headers: dict[str, str],
    order_settings: OrderSettings,
    sessions: Sessions,
) -> None:
    limit = order_settings.max_body_bytes

    async def chunks() -> AsyncIterator[bytes]:
        yield b'{"items": [{"sku": "SERUM-NIA-30", "quantity": 1}], "padding": "'
        for _ in range(limit // 1024 + 1):
            yield b"x" * 1024
        yield b'"}'

    response = await client.post(
        "/v1/orders",
        content=chunks(),
        headers={**order_headers, "Content-Type": "application/json"},
    )
    assert "content-length" not in response.request.headers
    assert_problem(response, 413, str(limit))
    assert await order_count(sessions) == 0


@pytest.mark.parametrize(
    ("content_type", "content"),
    [
        ("text/plain", b'{"items": [{"sku": "SERUM-NIA-30", "quantity": 1}]}'),
        ("application/x-www-form-urlencoded", b"sku=SERUM-NIA-30&quantity=1"),
        ("application/xml", b"<items><sku>SERUM-NIA-30</sku></items>"),
    ],
    ids=["text", "form", "xml"],
)
async def test_a_body_that_is_not_json_is_415_naming_the_media_type(
    client: httpx.AsyncClient,
    order_headers: dict[str, str],
    sessions: Sessions,
    content_type: str,
    content: bytes,
) -> None:
    response = await client.post(
        "/v1/orders", content=content, headers={**order_headers, "Content-Type": content_type}
    )
    assert_problem(response, 415, "application/json")
    assert await order_count(sessions) == 0


async def test_a_json_body_without_a_content_type_is_415_saying_so(
    client: httpx.AsyncClient, order_headers: dict[str, str], sessions: Sessions
) -> None:
    response = await client.post(
        "/v1/orders",
        content=b'{"items": [{"sku": "SERUM-NIA-30", "quantity": 1}]}',
        headers=order_headers,
    )
    assert "content-type" not in response.request.headers
    assert_problem(response, 415, "application/json", "it has none")
    assert await order_count(sessions) == 0


async def test_a_content_length_that_is_not_a_number_is_400_naming_the_header(
    client: httpx.AsyncClient, order_headers: dict[str, str]
) -> None:
    response = await client.post(
        "/v1/orders",
        content=b"{}",
        headers={**order_headers, "Content-Type": "application/json", "Content-Length": "lots"},
    )
    assert response.request.headers["content-length"] == "lots"
    assert_problem(response, 400, "Content-Length")


# --- reading orders -----------------------------------------------------------------------


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


# --- cancelling ---------------------------------------------------------------------------


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
                select(outbox.c.message_type, outbox.c.key, outbox.c.body).order_by(outbox.c.id)
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


# --- the catalogue ------------------------------------------------------------------------


async def test_the_catalogue_lists_the_twelve_seeded_products(
    client: httpx.AsyncClient, sessions: Sessions
) -> None:
    response = await client.get("/v1/products")
    assert response.status_code == 200
    listed = response.json()
    assert len(listed) == 12
    assert [p["sku"] for p in listed] == sorted(str(p["sku"]) for p in SEED_PRODUCTS)
    serum = next(p for p in listed if p["sku"] == "SERUM-NIA-30")
    assert serum == {
        "sku": "SERUM-NIA-30",
        "name": "Niacinamide 10% Serum 30 ml",
        "description": "Evens tone and calms redness.",
        "price": 89000,
        "currency": "IDR",
        "in_stock": await stock_of(sessions, "SERUM-NIA-30"),
    }


async def test_one_product_by_sku(client: httpx.AsyncClient) -> None:
    response = await client.get("/v1/products/SUN-SPF50-50")
    assert response.status_code == 200
    assert response.json()["price"] == 72000


async def test_an_unknown_sku_is_404_naming_it(client: httpx.AsyncClient) -> None:
    response = await client.get("/v1/products/NO-SUCH-CREAM")
    assert_problem(response, 404, "NO-SUCH-CREAM")


@pytest.mark.parametrize(
    "sku", ["serum-nia-30", "nul%00byte", "%F0%9F%A7%B4", "-LEADING-DASH", "X" * 65]
)
async def test_a_path_that_is_no_sku_is_422_naming_the_path_parameter(
    client: httpx.AsyncClient, sku: str
) -> None:
    response = await client.get(f"/v1/products/{sku}")
    assert_problem(response, 422, "path.sku")


# --- operations ---------------------------------------------------------------------------


async def test_health_and_readiness_answer_200_when_the_database_does(
    client: httpx.AsyncClient,
) -> None:
    assert (await client.get("/healthz")).status_code == 200
    ready = await client.get("/readyz")
    assert ready.status_code == 200
    assert ready.json() == {"status": "ready", "database": "ok"}


async def test_metrics_count_requests_by_route_template_not_by_raw_path(
    client: httpx.AsyncClient, auth: dict[str, str]
) -> None:
    order = await place(client, auth, ("CLEANSER-GEL-150", 1))
    for _ in range(2):
        assert (await client.get(f"/v1/orders/{order['id']}", headers=auth)).status_code == 200
    await client.get(f"/v1/orders/{uuid.uuid4()}", headers=auth)

    response = await client.get("/metrics")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/plain")
    text = response.text
    assert 'http_requests_total{method="GET",route="/v1/orders/{order_id}",status="200"} 2.0' in (
        text
    )
    assert 'http_requests_total{method="GET",route="/v1/orders/{order_id}",status="404"} 1.0' in (
        text
    )
    assert 'http_requests_total{method="POST",route="/v1/orders",status="201"} 1.0' in text
    assert order["id"] not in text
    assert 'http_request_duration_seconds_count{method="GET",route="/v1/orders/{order_id}"}' in (
        text
    )


async def test_a_path_nobody_serves_is_a_404_problem(client: httpx.AsyncClient) -> None:
    response = await client.get("/v1/nothing-here")
    assert_problem(response, 404, "Not Found")


async def test_a_method_a_route_does_not_take_is_405_with_allow(
    client: httpx.AsyncClient, auth: dict[str, str]
) -> None:
    response = await client.delete("/v1/orders", headers=auth)
    assert_problem(response, 405, "Method Not Allowed")
    allowed = set(response.headers["allow"].replace(" ", "").split(","))
    assert {"GET", "POST"} <= allowed
    assert "DELETE" not in allowed
