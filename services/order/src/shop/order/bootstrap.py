"""The one place that wires concrete adapters: database, transport, app, worker."""

from __future__ import annotations

from fastapi import FastAPI

from shop.database import create_engine, session_factory, sqlalchemy_url
from shop.messaging import Naming, Relay, Worker, create_transport
from shop.messaging.logging import configure_logging
from shop.order.api.app import create_app
from shop.order.handlers import router
from shop.order.settings import OrderSettings


def build_app(settings: OrderSettings) -> FastAPI:
    configure_logging(json=settings.log_json)
    engine = create_engine(settings.database_url, pool_size=settings.db_pool_size)
    return create_app(settings, engine)


def build_worker(settings: OrderSettings, *, health_port: int | None = None) -> Worker:
    """Consumes PaymentReceived and, unless turned off, relays the outbox."""
    configure_logging(json=settings.log_json)
    engine = create_engine(settings.database_url, pool_size=4)
    transport = create_transport(settings.messaging)
    relay = (
        Relay(
            sqlalchemy_url(settings.database_url),
            transport,
            naming=Naming(settings.messaging.namespace),
            settings=settings.relay,
        )
        if settings.run_relay
        else None
    )
    return Worker(
        settings.messaging,
        transport,
        routers=[router],
        sessions=session_factory(engine),
        relay=relay,
        health_port=settings.worker_health_port if health_port is None else health_port,
        on_close=[engine.dispose],
    )
