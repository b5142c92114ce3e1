"""The operations routes every service's API serves: liveness, readiness and Prometheus
metrics (from the ``CollectorRegistry`` in ``app.state.registry``)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from fastapi import APIRouter, Request, Response
from fastapi.responses import JSONResponse
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest


def operations_router(
    ready: Callable[[Request], Awaitable[None]], *, checks: str = "database"
) -> APIRouter:
    """``/healthz``, ``/readyz`` (``ready`` returns, else 503 with its error; the body names
    what it checked under ``checks``: ``{"status": "ready", "database": "ok"}``) and
    ``/metrics``, left out of the OpenAPI document."""
    router = APIRouter(tags=["operations"], include_in_schema=False)

    @router.get("/healthz")
    async def healthz() -> dict[str, str]:
        return {"status": "ok"}

    @router.get("/readyz")
    async def readyz(request: Request) -> JSONResponse:
        try:
            await ready(request)
        except Exception as error:  # any failure means "not ready"; the reason is in the body
            return JSONResponse({"status": "not ready", checks: repr(error)}, status_code=503)
        return JSONResponse({"status": "ready", checks: "ok"})

    @router.get("/metrics")
    async def metrics(request: Request) -> Response:
        return Response(generate_latest(request.app.state.registry), media_type=CONTENT_TYPE_LATEST)

    return router
