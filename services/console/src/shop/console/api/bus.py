"""The bus as the services see it: each outbox's backlog, each consumer's counts and lag;
and how the payments stand against the gateways' records (the reconciliation)."""

from __future__ import annotations

from fastapi import APIRouter, Request
from starlette.responses import RedirectResponse, Response

from shop.console.api.dependencies import LOGIN_REQUIRED, CsrfChecked, Ops
from shop.console.api.rendering import render
from shop.console.api.security import flash
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


@router.get("/reconciliation")
async def reconciliation(request: Request, ops: Ops) -> Response:
    try:
        report, problem = await ops.reconciliation(), None
    except OpsError as error:
        report, problem = None, str(error)
    return render(request, "reconciliation.html", report=report, problem=problem)


@router.post("/reconciliation")
async def reconcile_now(request: Request, _: CsrfChecked, ops: Ops) -> Response:
    report = await ops.reconcile()
    found = sum(report.drift.values())
    repaired = sum(1 for finding in report.findings if finding.repaired)
    flash(
        request,
        "success",
        f"Reconciled {report.checked} payments opened since {report.since}: {found} found, "
        f"{repaired} repaired. Orders and receipts were checked too: see shopctl reconcile.",
    )
    return RedirectResponse("/reconciliation", status_code=303)
