"""The FastAPI application of payment-service."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager

from fastapi import FastAPI
from prometheus_client import CollectorRegistry

from shop.payment.api import health, problems, webhooks
from shop.payment.ports import WebhookStore
from shop.payment.settings import PaymentSettings
from shop.web.guards import BodyLimit
from shop.web.metrics import HttpMetrics
from shop.web.tracing import request_telemetry

DESCRIPTION = """
Payment gateways' webhooks for the skincare shop. Each notification is verified, kept once
and answered `200` at once; a worker applies the payment afterwards. Every error is an
`application/problem+json` document that names the problem.
"""


def create_app(
    settings: PaymentSettings,
    store: WebhookStore,
    *,
    on_close: Sequence[Callable[[], Awaitable[None]]] = (),
) -> FastAPI:
    """The API on ``store`` (``bootstrap`` wires it); ``on_close`` runs when it stops."""

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        yield
        for close in on_close:
            await close()

    app = FastAPI(
        title="Skincare Shop: payment-service",
        version="1.0.0",
        description=DESCRIPTION,
        lifespan=lifespan,
        # A SERVER span per request once the process traces (shop.web.tracing).
        telemetry=request_telemetry(),
    )
    registry = CollectorRegistry()
    app.state.settings = settings
    app.state.store = store
    app.state.registry = registry
    routers = (webhooks.router, health.router)
    for router in routers:
        app.include_router(router)
    problems.install(app, routers)
    app.add_middleware(BodyLimit, max_bytes=settings.max_body_bytes)
    app.add_middleware(HttpMetrics, registry=registry)
    return app
