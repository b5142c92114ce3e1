"""The HTTP API on a real database: every bad checkout input is a 4xx problem document that
names what is wrong, and reserves, stores and publishes nothing."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest

from shop.order.domain.money import MAX_LINE_QUANTITY
from shop.order.settings import OrderSettings

from .api_helpers import (
    Sessions,
    assert_problem,
    checkout_body,
    order_count,
    outbox_types,
    stock_of,
)


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
