"""The one place that wires concrete adapters: database, transport, app, worker. Unit tests
wire fakes into the app through ``build_app(settings, store=…)`` and into the worker's
handlers through :func:`shop.payment.handlers.build_router`."""

from __future__ import annotations

from typing import Final

from fastapi import FastAPI

from shop.database import create_engine, session_factory
from shop.messaging import Relay, Worker, create_transport
from shop.messaging.logging import configure_logging
from shop.messaging.tracing import configure_tracing
from shop.payment.adapters.payments import SqlPaymentStore
from shop.payment.adapters.webhook_events import AsyncpgWebhookStore
from shop.payment.api.app import create_app
from shop.payment.handlers import build_router
from shop.payment.ports import WebhookStore
from shop.payment.settings import PaymentSettings

SERVICE: Final = "payment-service"
"""``service.name`` of its spans."""


def build_app(settings: PaymentSettings, *, store: WebhookStore | None = None) -> FastAPI:
    configure_logging(json=settings.log_json)
    configure_tracing(settings.tracing, service_name=SERVICE, process_kind="api")
    if store is not None:
        return create_app(settings, store)
    engine = create_engine(settings.database_url, pool_size=settings.db_pool_size)
    return create_app(settings, AsyncpgWebhookStore(engine), on_close=[engine.dispose])


def build_worker(settings: PaymentSettings, *, health_port: int | None = None) -> Worker:
    """Consumes OrderCreated, OrderCancelled and ProcessPayment and, unless turned off,
    relays the outbox."""
    configure_logging(json=settings.log_json)
    configure_tracing(settings.tracing, service_name=SERVICE, process_kind="worker")
    engine = create_engine(settings.database_url, pool_size=4)
    sessions = session_factory(engine)
    transport = create_transport(settings.messaging)
    relay = (
        Relay(settings.database_url, transport, settings=settings.relay)
        if settings.run_relay
        else None
    )
    return Worker(
        settings.messaging,
        transport,
        routers=[build_router(SqlPaymentStore(sessions))],
        sessions=sessions,
        relay=relay,
        health_host=settings.worker_health_host,
        health_port=settings.worker_health_port if health_port is None else health_port,
        on_close=[engine.dispose],
    )
