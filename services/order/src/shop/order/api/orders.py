"""Checkout and the customer's orders. Routes stay thin: validation happens in the
request models, rules in the domain, transactions in :mod:`shop.order.checkout` and
:mod:`shop.order.cancellation`."""

from __future__ import annotations

import uuid
from typing import Annotated, Any

import asyncpg
from fastapi import APIRouter, Depends, Header, HTTPException, Query, Request, Response

from shop.order import cancellation, checkout, queries
from shop.order.api.auth import CurrentCustomer
from shop.order.api.dependencies import Session
from shop.order.api.problems import Problem
from shop.order.api.schemas import CheckoutRequest
from shop.order.database import driver_connection
from shop.order.views import OrderPage, OrderView

router = APIRouter(prefix="/v1/orders", tags=["orders"])

NUMBER_ATTEMPTS = 3
"""Order numbers are random; on the rare collision the checkout draws again."""

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


def _problem(description: str) -> dict[str, Any]:
    return {"model": Problem, "description": description}


_UNAUTHORIZED: dict[int | str, dict[str, Any]] = {
    401: _problem("Missing, invalid or expired token")
}
_NOT_FOUND: dict[int | str, dict[str, Any]] = {404: _problem("No such order (or not yours)")}


def _location(order_id: uuid.UUID | str) -> str:
    return f"/v1/orders/{order_id}"


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


@router.post(
    "",
    status_code=201,
    summary="Place an order",
    responses={
        400: _problem("Missing Idempotency-Key header"),
        **_UNAUTHORIZED,
        409: _problem("Not enough stock (names the sku)"),
        413: _problem("Body too large"),
        415: _problem("Body is not application/json"),
        422: _problem("Invalid body (names the fields), unknown sku, or key reused"),
    },
)
async def place_order(
    request: Request,
    body: CheckoutRequest,
    *,
    customer: CurrentCustomer,
    _json: JsonBody,
    idempotency_key: IdempotencyKey,
) -> OrderView:
    lines = [(line.sku, line.quantity) for line in body.items]
    request_hash = body.fingerprint()
    async with driver_connection(request.app.state.engine) as connection:
        for attempt in range(1, NUMBER_ATTEMPTS + 1):
            try:
                async with connection.transaction():
                    result = await checkout.place_order(
                        connection,
                        customer,
                        lines,
                        idempotency_key=idempotency_key,
                        request_hash=request_hash,
                    )
                break
            except asyncpg.UniqueViolationError as error:
                taken = error.constraint_name == checkout.ORDER_NUMBER_CONSTRAINT
                if not taken or attempt == NUMBER_ATTEMPTS:
                    raise
    headers = {"Location": _location(result.order_id)}
    if result.replayed:
        headers["Idempotent-Replayed"] = "true"
    # The stored JSON text as it is: the first answer and every replay are the same bytes.
    return Response(  # type: ignore[return-value]
        result.body, status_code=result.status, media_type="application/json", headers=headers
    )


@router.get(
    "",
    summary="The caller's orders, newest first",
    responses={400: _problem("A cursor this service did not hand out"), **_UNAUTHORIZED},
)
async def list_orders(
    customer: CurrentCustomer,
    session: Session,
    limit: Annotated[int, Query(ge=1, le=100)] = 20,
    cursor: Annotated[str | None, Query(max_length=200)] = None,
) -> OrderPage:
    return await queries.list_orders(session, customer.id, limit=limit, cursor=cursor)


@router.get(
    "/{order_id}",
    summary="One of the caller's orders",
    responses={**_UNAUTHORIZED, **_NOT_FOUND},
)
async def get_order(order_id: uuid.UUID, customer: CurrentCustomer, session: Session) -> OrderView:
    return await queries.load_order(session, order_id, customer_id=customer.id)


@router.post(
    "/{order_id}/cancel",
    summary="Cancel a pending order",
    responses={
        **_UNAUTHORIZED,
        **_NOT_FOUND,
        409: _problem("The order is not pending (names its status)"),
    },
)
async def cancel_order(
    order_id: uuid.UUID, customer: CurrentCustomer, session: Session
) -> OrderView:
    async with session.begin():
        return await cancellation.cancel_order(session, customer, order_id)
