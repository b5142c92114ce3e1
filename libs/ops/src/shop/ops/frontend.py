"""The shop as a frontend sees it: the catalogue and the checkout of order-service's API,
with a customer's bearer token and an ``Idempotency-Key`` per checkout."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import httpx

from shop.ops.errors import OpsError
from shop.ops.http import TIMEOUT, asked_again_when_busy, reaching
from shop.ops.settings import ORDER_SERVICE, OpsSettings
from shop.ops.tokens import customer_token


@dataclass(frozen=True, slots=True)
class Product:
    sku: str
    name: str
    price: int
    currency: str
    in_stock: int


@dataclass(frozen=True, slots=True)
class CartLine:
    sku: str
    quantity: int = 1


@dataclass(frozen=True, slots=True)
class PlacedOrder:
    id: uuid.UUID
    number: str
    status: str
    total: int
    currency: str
    created_at: datetime
    replayed: bool
    """The answer to an earlier checkout with the same Idempotency-Key."""


class CheckoutRefused(OpsError):
    """order-service answered the checkout with a problem (its status and title)."""

    def __init__(self, status: int, title: str, detail: str) -> None:
        super().__init__(f"order-service refused the order ({status} {title}): {detail}")
        self.status = status
        self.title = title
        self.detail = detail


def order_api(settings: OpsSettings) -> httpx.AsyncClient:
    """A client of order-service's API (close it, or use it in ``async with``)."""
    return httpx.AsyncClient(base_url=settings.order_api_url, timeout=TIMEOUT)


def _problem(response: httpx.Response) -> tuple[str, str]:
    try:
        body: Any = response.json()
    except ValueError:
        return response.reason_phrase, response.text[:200]
    if not isinstance(body, dict):
        return response.reason_phrase, str(body)[:200]
    return str(body.get("title") or response.reason_phrase), str(body.get("detail") or "")


async def products(client: httpx.AsyncClient, settings: OpsSettings) -> list[Product]:
    """The products on sale."""
    with reaching(ORDER_SERVICE, settings.order_api_url):
        response = await client.get("/v1/products")
    if response.status_code != 200:
        title, detail = _problem(response)
        raise OpsError(f"order-service answered {response.status_code} {title}: {detail}")
    return [
        Product(
            sku=item["sku"],
            name=item["name"],
            price=int(item["price"]),
            currency=item["currency"],
            in_stock=int(item["in_stock"]),
        )
        for item in response.json()
    ]


async def place_order(
    client: httpx.AsyncClient,
    settings: OpsSettings,
    token: str,
    lines: Sequence[CartLine],
    *,
    idempotency_key: str | None = None,
) -> PlacedOrder:
    """``POST /v1/orders`` as a frontend sends it; raises :class:`CheckoutRefused` on a
    refusal (out of stock, unknown sku, …). Sent again with the same Idempotency-Key, so
    placing one order, when the API says to (a 503) or the connection drops under it (a
    keep-alive connection the server had just closed)."""
    headers = {
        "Authorization": f"Bearer {token}",
        "Idempotency-Key": idempotency_key or str(uuid.uuid4()),
    }
    items = {"items": [{"sku": line.sku, "quantity": line.quantity} for line in lines]}
    with reaching(ORDER_SERVICE, settings.order_api_url):
        response = await asked_again_when_busy(
            lambda: client.post("/v1/orders", json=items, headers=headers),
            also_when=(httpx.ReadError, httpx.RemoteProtocolError),
        )
    if response.status_code not in {200, 201}:
        raise CheckoutRefused(response.status_code, *_problem(response))
    body = response.json()
    return PlacedOrder(
        id=uuid.UUID(body["id"]),
        number=body["number"],
        status=body["status"],
        total=int(body["total"]),
        currency=body["currency"],
        created_at=datetime.fromisoformat(body["created_at"]),
        replayed=response.headers.get("Idempotent-Replayed") == "true",
    )


async def checkout(
    settings: OpsSettings,
    lines: Sequence[CartLine],
    *,
    customer_id: str = "cust_ayu",
    email: str = "ayu@example.com",
    idempotency_key: str | None = None,
) -> PlacedOrder:
    """Place one order for the customer ``customer_id``, with a token made for it."""
    if not lines:
        raise OpsError("an order needs at least one line (--sku)")
    token = customer_token(settings, customer_id, email)
    async with order_api(settings) as client:
        return await place_order(client, settings, token, lines, idempotency_key=idempotency_key)
