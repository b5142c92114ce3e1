"""The FastAPI application of payment-service."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Collection, Mapping, Sequence
from contextlib import asynccontextmanager
from typing import Any, Final

from fastapi import APIRouter, FastAPI
from fastapi.routing import APIRoute
from prometheus_client import CollectorRegistry

from shop.messaging.tracing import EdgeTracerProvider
from shop.payment.api import health, problems, webhooks
from shop.payment.ports import WebhookStore
from shop.payment.settings import Gateway, PaymentSettings
from shop.web.guards import BodyLimit
from shop.web.metrics import HttpMetrics
from shop.web.tracing import request_telemetry

DESCRIPTION = """
Payment gateways' webhooks for the skincare shop. Each notification is verified, kept once
and answered `200` at once; a worker applies the payment afterwards. Every error is an
`application/problem+json` document that names the problem.
"""


GATEWAY_ROUTES: Final[Mapping[Gateway, Callable[..., Any]]] = {
    "shop": webhooks.shop_webhook,
    "midtrans": webhooks.midtrans_webhook,
}
"""The webhook route of each gateway, served only when the gateway is on."""


def webhook_routes(gateways: Collection[Gateway]) -> APIRouter:
    """The webhook routes of the gateways that are on: a gateway the shop does not use
    exposes nothing (its path answers 404 and the OpenAPI document leaves it out), so no
    one can probe a route whose secret nobody configured."""
    off = {GATEWAY_ROUTES[gateway] for gateway in GATEWAY_ROUTES if gateway not in gateways}
    served = APIRouter()
    served.routes.extend(
        route
        for route in webhooks.router.routes
        if not (isinstance(route, APIRoute) and route.endpoint in off)
    )
    return served


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
        # A SERVER span per request once the process traces (shop.web.tracing), starting
        # a trace of its own: a caller's traceparent is linked, never continued.
        telemetry={**request_telemetry(), "tracer_provider": EdgeTracerProvider()},
    )
    registry = CollectorRegistry()
    app.state.settings = settings
    app.state.store = store
    app.state.registry = registry
    routers = (webhook_routes(settings.gateways), health.router)
    for router in routers:
        app.include_router(router)
    problems.install(app, routers)
    app.add_middleware(BodyLimit, max_bytes=settings.max_body_bytes)
    app.add_middleware(HttpMetrics, registry=registry)
    return app
