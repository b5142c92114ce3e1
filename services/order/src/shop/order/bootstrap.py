"""The one place that wires concrete adapters: database, transport, app, worker. Unit tests
wire fakes into the app through ``build_app(settings, stores=…)`` and into the worker's
handlers through :func:`shop.order.handlers.build_router`."""

from __future__ import annotations

from typing import Final

from fastapi import FastAPI
from sqlalchemy.ext.asyncio import AsyncEngine

from shop.database import create_engine, session_factory
from shop.database.driver import unavailable
from shop.messaging import Relay, Worker, create_transport
from shop.messaging.logging import configure_logging
from shop.messaging.metrics import Metrics
from shop.messaging.relay import asyncpg_dsn
from shop.messaging.retention import Retention
from shop.messaging.tracing import configure_tracing
from shop.order.adapters.checkout import AsyncpgCheckoutStore
from shop.order.adapters.orders import SqlOrderStore
from shop.order.adapters.retention import retained_tables
from shop.order.api.app import create_app
from shop.order.handlers import build_router
from shop.order.internal import internal_routes
from shop.order.ports import Stores
from shop.order.settings import OrderSettings

SERVICE: Final = "order-service"
"""``service.name`` of its spans."""


def postgres_stores(engine: AsyncEngine) -> Stores:
    """The orders and the checkout on ``engine`` (one pool, one connection budget); closing
    the stores disposes of the engine."""
    return Stores(
        orders=SqlOrderStore(session_factory(engine)),
        checkout=AsyncpgCheckoutStore(engine),
        close=[engine.dispose],
    )


def build_app(settings: OrderSettings, *, stores: Stores | None = None) -> FastAPI:
    configure_logging(json=settings.log_json)
    configure_tracing(settings.tracing, service_name=SERVICE, process_kind="api")
    if stores is None:
        stores = postgres_stores(
            create_engine(
                settings.database_url,
                pool_size=settings.db_pool_size,
                timeouts=settings.database_timeouts,
            )
        )
    return create_app(settings, stores)


def build_worker(settings: OrderSettings, *, health_port: int | None = None) -> Worker:
    """Consumes PaymentReceived and, unless turned off, relays the outbox; cleans the
    inbox and the idempotency keys when it holds the database's retention lock."""
    configure_logging(json=settings.log_json)
    configure_tracing(settings.tracing, service_name=SERVICE, process_kind="worker")
    engine = create_engine(settings.database_url, pool_size=4, timeouts=settings.database_timeouts)
    stores = postgres_stores(engine)
    transport = create_transport(settings.messaging)
    relay = (
        Relay(
            settings.database_timeouts.dsn(settings.database_url),
            transport,
            settings=settings.relay,
        )
        if settings.run_relay
        else None
    )
    metrics = relay.metrics if relay else Metrics()
    retention = Retention(
        asyncpg_dsn(settings.database_url),
        retained_tables(settings.retention),
        settings=settings.retention,
        metrics=metrics,
        name=SERVICE,
    )
    return Worker(
        settings.messaging,
        transport,
        # A database restarting, or a lock held too long, fails every handler: that is no
        # message's fault.
        outage=unavailable,
        routers=[build_router(stores.orders)],
        sessions=session_factory(engine),
        relay=relay,
        metrics=metrics,
        jobs=[retention.run],
        routes=internal_routes(session_factory(engine)),
        operator_token=(
            settings.operator_token.get_secret_value()
            if settings.operator_token is not None
            else None
        ),
        health_host=settings.worker_health_host,
        health_port=settings.worker_health_port if health_port is None else health_port,
        on_close=list(stores.close),
    )
