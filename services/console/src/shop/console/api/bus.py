"""The bus as the services see it: each outbox's backlog, each consumer's counts and lag."""

from __future__ import annotations

from fastapi import APIRouter, Request
from starlette.responses import Response

from shop.console.api.dependencies import LOGIN_REQUIRED, Ops
from shop.console.api.rendering import render
from shop.ops.errors import OpsError

router = APIRouter(dependencies=[LOGIN_REQUIRED])


@router.get("/outbox")
async def outbox(request: Request, ops: Ops) -> Response:
    return render(request, "outbox.html", outboxes=await ops.outbox())


@router.get("/consumers")
async def consumers(request: Request, ops: Ops) -> Response:
    counts = await ops.consumer_counts()
    # The lag comes from the broker in one read: when it cannot be had, the counts still
    # show, and the reason stands in its place.
    try:
        lag, lag_problem = await ops.consumer_lag(), None
    except OpsError as error:
        lag, lag_problem = [], str(error)
    return render(request, "consumers.html", counts=counts, lag=lag, lag_problem=lag_problem)
