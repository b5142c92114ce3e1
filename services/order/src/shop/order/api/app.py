"""The FastAPI application of order-service."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI
from prometheus_client import CollectorRegistry
from sqlalchemy.ext.asyncio import AsyncEngine

from shop.database import session_factory
from shop.order.api import health, orders, problems, products
from shop.order.api.guards import BodyLimit
from shop.order.api.metrics import HttpMetrics
from shop.order.settings import OrderSettings

DESCRIPTION = """
Checkout for the skincare shop. `POST /v1/orders` commits the order and answers `201` at
once; confirmation emails and payment follow in the background. Every error is an
`application/problem+json` document that names the problem.
"""


def create_app(settings: OrderSettings, engine: AsyncEngine) -> FastAPI:
    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        yield
        await engine.dispose()

    app = FastAPI(
        title="Skincare Shop: order-service",
        version="1.0.0",
        description=DESCRIPTION,
        lifespan=lifespan,
    )
    registry = CollectorRegistry()
    app.state.settings = settings
    app.state.engine = engine
    app.state.sessions = session_factory(engine)
    app.state.registry = registry
    routers = (products.router, orders.router, health.router)
    for router in routers:
        app.include_router(router)
    problems.install(app, routers)
    app.add_middleware(BodyLimit, max_bytes=settings.max_body_bytes)
    app.add_middleware(HttpMetrics, registry=registry)
    return app
