"""Every dependency and parameter the routes declare, as an ``Annotated`` type: the settings,
the caller, the request's headers, path and query parameters and media type, and the
stores that ``bootstrap`` wired into the app."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Annotated

from fastapi import Depends, Header, HTTPException, Path, Query, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from shop.order.api.auth import authenticate
from shop.order.api.schemas import SKU_PATTERN
from shop.order.domain.customer import Customer
from shop.order.ports import CheckoutStore, Orders, OrderStore, Stores
from shop.order.settings import OrderSettings

_bearer = HTTPBearer(auto_error=False, description="A customer token (HS256 JWT).")

# Every dependency is a coroutine, even those that only read app.state: FastAPI runs a plain
# function in its thread pool, which cost the checkout a third of its throughput
# (make bench-checkout).


async def _settings(request: Request) -> OrderSettings:
    settings: OrderSettings = request.app.state.settings
    return settings


def _stores(request: Request) -> Stores:
    stores: Stores = request.app.state.stores
    return stores


Settings = Annotated[OrderSettings, Depends(_settings)]


# Each reads app.state itself rather than through another dependency: on the checkout's hot
# path every dependency level is a measurable share of its CPU.
async def _order_store(request: Request) -> OrderStore:
    return _stores(request).orders


async def _checkout_store(request: Request) -> CheckoutStore:
    return _stores(request).checkout


OrderStoreDep = Annotated[OrderStore, Depends(_order_store)]
CheckoutStoreDep = Annotated[CheckoutStore, Depends(_checkout_store)]


async def _reading_orders(store: OrderStoreDep) -> AsyncIterator[Orders]:
    async with store.reading() as orders:
        yield orders


ReadOrders = Annotated[Orders, Depends(_reading_orders)]
"""The orders and products, for a route that only reads."""


async def _current_customer(
    request: Request,
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)],
) -> Customer:
    if credentials is None or credentials.scheme.lower() != "bearer":
        raise HTTPException(
            status_code=401, detail="an Authorization: Bearer <token> header is required"
        )
    return authenticate(await _settings(request), credentials.credentials)


CurrentCustomer = Annotated[Customer, Depends(_current_customer)]

IdempotencyKey = Annotated[
    str,
    Header(
        alias="Idempotency-Key",
        min_length=1,
        max_length=200,
        pattern=r"^[\x21-\x7e]+$",
        description="Unique per checkout attempt; a retry with the same key and body gets "
        "the same answer and never a second order. Missing: 400.",
        examples=["8e0f3a52-3d4b-4f0e-9a57-0c7b1d2e3f40"],
    ),
]


async def _require_json(request: Request) -> None:
    """Runs before the body is validated, so a body of another media type is named as such
    instead of failing as a JSON document it never was."""
    content_type = request.headers.get("content-type", "")
    if content_type.split(";")[0].strip().lower() != "application/json":
        described = f"its Content-Type is {content_type}" if content_type else "it has none"
        raise HTTPException(
            status_code=415,
            detail=f"send the body as application/json with a Content-Type saying so; {described}",
        )


JsonBody = Annotated[None, Depends(_require_json)]

SkuPath = Annotated[
    str,
    Path(min_length=1, max_length=64, pattern=SKU_PATTERN, examples=["SERUM-NIA-30"]),
]
PageLimit = Annotated[int, Query(ge=1, le=100)]
PageCursor = Annotated[str | None, Query(max_length=200)]
