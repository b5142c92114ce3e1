"""Checkout and the customer's orders. Routes stay thin: validation happens in the
request models and dependencies, rules in the domain, transactions in the use cases of
:mod:`shop.order.service_layer`."""

from __future__ import annotations

import uuid
from typing import Any

from fastapi import APIRouter, Response

from shop.order.api.dependencies import (
    CheckoutStoreDep,
    CurrentCustomer,
    IdempotencyKey,
    JsonBody,
    OrderStoreDep,
    PageCursor,
    PageLimit,
    ReadOrders,
)
from shop.order.api.problems import Problem
from shop.order.api.schemas import CheckoutRequest
from shop.order.domain.orders import OrderPage, OrderView
from shop.order.service_layer import cancellation, checkout

router = APIRouter(prefix="/v1/orders", tags=["orders"])


def _problem(description: str) -> dict[str, Any]:
    return {"model": Problem, "description": description}


_UNAUTHORIZED: dict[int | str, dict[str, Any]] = {
    401: _problem("Missing, invalid or expired token")
}
_NOT_FOUND: dict[int | str, dict[str, Any]] = {404: _problem("No such order (or not yours)")}


def _location(order_id: uuid.UUID | str) -> str:
    return f"/v1/orders/{order_id}"


# OpenAPI links: how an answer leads to the next call (a client's, or schemathesis' stateful
# run), by the operation ids the app gives its routes (their function names, see app.py).
def _link(operation_id: str, description: str, **parameters: str) -> dict[str, Any]:
    return {"operationId": operation_id, "description": description, "parameters": parameters}


def _order_links(order_id: str) -> dict[str, dict[str, Any]]:
    """Read and cancel the order whose id is at ``order_id`` (a runtime expression)."""
    return {
        "GetOrder": _link("get_order", "Read this order", **{"path.order_id": order_id}),
        "CancelOrder": _link("cancel_order", "Cancel this order", **{"path.order_id": order_id}),
    }


_THIS_ORDER = "$response.body#/id"


@router.post(
    "",
    status_code=201,
    summary="Place an order",
    responses={
        201: {
            "description": "The order, pending payment (a replay: the first answer again)",
            "headers": {
                "Location": {
                    "description": "Where the order can be read",
                    "required": True,
                    "schema": {"type": "string"},
                },
                "Idempotent-Replayed": {
                    "description": "`true` when this answer replays an earlier checkout's",
                    "schema": {"type": "string", "enum": ["true"]},
                },
            },
            "links": _order_links(_THIS_ORDER),
        },
        400: _problem("Missing Idempotency-Key header"),
        **_UNAUTHORIZED,
        409: _problem("Not enough stock (names the sku), or a product changed while ordered"),
        413: _problem("Body too large"),
        415: _problem("Body is not application/json"),
        422: _problem("Invalid body (names the fields), unknown sku, or key reused"),
    },
)
async def place_order(
    body: CheckoutRequest,
    *,
    customer: CurrentCustomer,
    _json: JsonBody,
    idempotency_key: IdempotencyKey,
    store: CheckoutStoreDep,
) -> OrderView:
    answer = await checkout.place_order(
        store,
        customer,
        [(line.sku, line.quantity) for line in body.items],
        idempotency_key=idempotency_key,
        request_hash=body.fingerprint(),
    )
    headers = {"Location": _location(answer.order_id)}
    if answer.replayed:
        headers["Idempotent-Replayed"] = "true"
    # The stored JSON text as it is: the first answer and every replay are the same bytes.
    return Response(  # type: ignore[return-value]
        answer.body, status_code=answer.status, media_type="application/json", headers=headers
    )


@router.get(
    "",
    summary="The caller's orders, newest first",
    responses={
        200: {
            "description": "A page of orders",
            "links": {
                "NextPage": _link(
                    "list_orders",
                    "The next (older) page",
                    **{"query.cursor": "$response.body#/next_cursor"},
                ),
                "GetNewestOrder": _link(
                    "get_order",
                    "Read the newest order",
                    **{"path.order_id": "$response.body#/orders/0/id"},
                ),
            },
        },
        400: _problem("A cursor this service did not hand out"),
        **_UNAUTHORIZED,
    },
)
async def list_orders(
    customer: CurrentCustomer,
    orders: ReadOrders,
    limit: PageLimit = 20,
    cursor: PageCursor = None,
) -> OrderPage:
    return await orders.page(customer.id, limit=limit, cursor=cursor)


@router.get(
    "/{order_id}",
    summary="One of the caller's orders",
    responses={
        200: {
            "description": "The order",
            "links": {"CancelOrder": _order_links(_THIS_ORDER)["CancelOrder"]},
        },
        **_UNAUTHORIZED,
        **_NOT_FOUND,
    },
)
async def get_order(
    order_id: uuid.UUID, customer: CurrentCustomer, orders: ReadOrders
) -> OrderView:
    return (await orders.get(order_id, customer_id=customer.id)).view


@router.post(
    "/{order_id}/cancel",
    summary="Cancel a pending order",
    responses={
        200: {
            "description": "The order, cancelled; its stock is released",
            # Cancelling again is refused (409) and leaves the order as it is.
            "links": _order_links(_THIS_ORDER),
        },
        **_UNAUTHORIZED,
        **_NOT_FOUND,
        409: _problem("The order is not pending (names its status)"),
    },
)
async def cancel_order(
    order_id: uuid.UUID, customer: CurrentCustomer, store: OrderStoreDep
) -> OrderView:
    return await cancellation.cancel_order(store, customer, order_id)
