"""Orders: found by id or number, each with its status and its timeline across services."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import RedirectResponse
from starlette.responses import Response

from shop.console.api.dependencies import LOGIN_REQUIRED, Ops, OrderId, Orders, SearchText
from shop.console.api.rendering import render
from shop.console.domain.errors import NotFound
from shop.ops.errors import OpsError

router = APIRouter(dependencies=[LOGIN_REQUIRED])


@router.get("/")
async def start() -> Response:
    return RedirectResponse("/orders", status_code=303)


@router.get("/orders")
async def orders(request: Request, directory: Orders, q: SearchText = "") -> Response:
    found = await directory.search(q)
    return render(request, "orders.html", query=q, orders=found)


@router.get("/orders/{order_id}")
async def order(request: Request, order_id: OrderId, directory: Orders, ops: Ops) -> Response:
    summary = await directory.get(order_id)
    if summary is None:
        raise NotFound(f"order-service has no order {order_id}")
    # The order's own row is shown even when a part its timeline comes from is down.
    try:
        timeline, timeline_problem = await ops.order_timeline(order_id), None
    except OpsError as error:
        timeline, timeline_problem = [], str(error)
    try:
        traces, traces_problem = await ops.order_traces(order_id), None
    except OpsError as error:
        traces, traces_problem = [], str(error)
    return render(
        request,
        "order.html",
        order=summary,
        timeline=timeline,
        timeline_problem=timeline_problem,
        traces=traces,
        traces_problem=traces_problem,
    )
