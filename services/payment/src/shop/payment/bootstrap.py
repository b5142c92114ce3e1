"""The one place that wires concrete adapters: database, transport, app, worker. Unit tests
wire fakes into the app through ``build_app(settings, store=…)`` and into the worker's
handlers through :func:`shop.payment.handlers.build_router`."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import timedelta
from typing import Final

from fastapi import FastAPI

from shop.database import create_engine, session_factory
from shop.database.driver import unavailable
from shop.messaging import Relay, Worker, create_transport
from shop.messaging.logging import configure_logging
from shop.messaging.metrics import Metrics
from shop.messaging.relay import asyncpg_dsn
from shop.messaging.retention import Retention
from shop.messaging.tracing import configure_tracing
from shop.payment.adapters.gateway_midtrans import MidtransGateway
from shop.payment.adapters.gateway_shop import ShopGateway
from shop.payment.adapters.metrics import PrometheusPaymentMetrics
from shop.payment.adapters.payments import SqlPaymentStore
from shop.payment.adapters.retention import retained_tables
from shop.payment.adapters.webhook_events import AsyncpgWebhookStore
from shop.payment.api.app import create_app
from shop.payment.domain.notifications import Provider
from shop.payment.handlers import build_router
from shop.payment.internal import internal_routes
from shop.payment.operations import Reconciler, refund_by_hand_route
from shop.payment.ports import PaymentGateway, WebhookStore
from shop.payment.service_layer.payments import PaymentWindow
from shop.payment.settings import PaymentSettings

SERVICE: Final = "payment-service"
"""``service.name`` of its spans."""


def build_app(settings: PaymentSettings, *, store: WebhookStore | None = None) -> FastAPI:
    configure_logging(json=settings.log_json)
    configure_tracing(settings.tracing, service_name=SERVICE, process_kind="api")
    if store is not None:
        return create_app(settings, store)
    engine = create_engine(
        settings.database_url,
        pool_size=settings.db_pool_size,
        timeouts=settings.database_timeouts,
    )
    return create_app(settings, AsyncpgWebhookStore(engine), on_close=[engine.dispose])


def build_gateways(settings: PaymentSettings) -> dict[Provider, PaymentGateway]:
    """The API client of each gateway the shop takes payments through."""
    timeout = settings.gateway_timeout_seconds
    gateways: dict[Provider, PaymentGateway] = {}
    if Provider.SHOP in settings.gateways:
        gateways[Provider.SHOP] = ShopGateway(
            settings.shop_gateway_api_url,
            settings.shop_gateway_api_key.get_secret_value(),
            timeout=timeout,
        )
    if Provider.MIDTRANS in settings.gateways:
        gateways[Provider.MIDTRANS] = MidtransGateway(
            settings.midtrans_api_url,
            settings.midtrans_server_key.get_secret_value(),
            timeout=timeout,
        )
    return gateways


def build_worker(
    settings: PaymentSettings,
    *,
    health_port: int | None = None,
    gateways: Mapping[Provider, PaymentGateway] | None = None,
) -> Worker:
    """Consumes OrderCreated, OrderCancelled, ProcessPayment, ExpirePayment and
    RefundPayment and, unless turned off, relays the outbox; cleans the inbox and clears the old
    raw bodies of notifications when it holds the database's retention lock. ``gateways``
    replaces the gateways' API clients (tests)."""
    configure_logging(json=settings.log_json)
    configure_tracing(settings.tracing, service_name=SERVICE, process_kind="worker")
    engine = create_engine(settings.database_url, pool_size=4, timeouts=settings.database_timeouts)
    sessions = session_factory(engine)
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
    window = PaymentWindow(
        length=timedelta(seconds=settings.payment_window_seconds),
        grace=timedelta(seconds=settings.expiry_grace_seconds),
    )
    store = SqlPaymentStore(sessions)
    gateways = build_gateways(settings) if gateways is None else gateways
    payment_metrics = PrometheusPaymentMetrics(metrics.registry)
    reconciler = Reconciler(
        store,
        gateways,
        payment_metrics,
        interval=settings.reconcile_interval_seconds,
        lookback=timedelta(seconds=settings.reconcile_lookback_seconds),
        settling=timedelta(seconds=settings.reconcile_settling_seconds),
    )
    return Worker(
        settings.messaging,
        transport,
        # A database restarting, or a lock held too long, fails every handler: that is no
        # message's fault.
        outage=unavailable,
        routers=[build_router(store, gateways, window, payment_metrics)],
        metrics=metrics,
        jobs=[reconciler.every_interval, retention.run],
        routes=[*reconciler.routes(), refund_by_hand_route(store), *internal_routes(sessions)],
        operator_token=(
            settings.operator_token.get_secret_value()
            if settings.operator_token is not None
            else None
        ),
        sessions=sessions,
        relay=relay,
        health_host=settings.worker_health_host,
        health_port=settings.worker_health_port if health_port is None else health_port,
        on_close=[engine.dispose],
    )
