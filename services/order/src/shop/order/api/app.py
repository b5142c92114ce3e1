"""The FastAPI application of order-service."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI
from fastapi.routing import APIRoute
from prometheus_client import CollectorRegistry

from shop.messaging.tracing import EdgeTracerProvider
from shop.order.api import health, orders, problems, products
from shop.order.ports import Stores
from shop.order.settings import OrderSettings
from shop.web.guards import BodyLimit
from shop.web.metrics import HttpMetrics
from shop.web.tracing import request_telemetry

DESCRIPTION = """
Checkout for the skincare shop. `POST /v1/orders` commits the order and answers `201` at
once; confirmation emails and payment follow in the background. Every error is an
`application/problem+json` document that names the problem.
"""


def _operation_id(route: APIRoute) -> str:
    """The route's function name (``place_order``, ``get_order``): stable ids for the OpenAPI
    links between operations (orders.py) and for generated clients."""
    return route.name


def create_app(settings: OrderSettings, stores: Stores) -> FastAPI:
    """The API on ``stores`` (``bootstrap`` wires them), which it closes when it stops."""

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        yield
        for close in stores.close:
            await close()

    app = FastAPI(
        title="Skincare Shop: order-service",
        version="1.0.0",
        description=DESCRIPTION,
        lifespan=lifespan,
        generate_unique_id_function=_operation_id,
        # A SERVER span per request once the process traces (shop.web.tracing), starting
        # a trace of its own: a caller's traceparent is linked, never continued.
        telemetry={**request_telemetry(), "tracer_provider": EdgeTracerProvider()},
    )
    registry = CollectorRegistry()
    app.state.settings = settings
    app.state.stores = stores
    app.state.registry = registry
    routers = (products.router, orders.router, health.router)
    for router in routers:
        app.include_router(router)
    problems.install(app, routers)
    app.add_middleware(BodyLimit, max_bytes=settings.max_body_bytes)
    app.add_middleware(HttpMetrics, registry=registry)
    return app
