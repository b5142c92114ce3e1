"""Liveness, readiness (the database answers) and metrics."""

from __future__ import annotations

from fastapi import APIRouter, Response
from fastapi.responses import JSONResponse
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from shop.payment.api.dependencies import Registry, Store

router = APIRouter(tags=["operations"], include_in_schema=False)


@router.get("/healthz")
async def healthz() -> dict[str, str]:
    return {"status": "ok"}


@router.get("/readyz")
async def readyz(store: Store) -> JSONResponse:
    try:
        await store.check()
    except Exception as error:  # any failure means "not ready"; the reason is in the body
        return JSONResponse({"status": "not ready", "database": repr(error)}, status_code=503)
    return JSONResponse({"status": "ready", "database": "ok"})


@router.get("/metrics")
async def metrics(registry: Registry) -> Response:
    return Response(generate_latest(registry), media_type=CONTENT_TYPE_LATEST)
