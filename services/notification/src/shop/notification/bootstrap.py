"""The one place that wires concrete adapters: database, e-mail provider, transport, worker."""

from __future__ import annotations

from typing import Final

from shop.database import create_engine, session_factory
from shop.database.driver import unavailable
from shop.messaging import PostgresDeadLetterStore, Worker, create_transport
from shop.messaging.logging import configure_logging
from shop.messaging.metrics import Metrics
from shop.messaging.relay import asyncpg_dsn
from shop.messaging.retention import Retention
from shop.messaging.tracing import configure_tracing
from shop.notification.adapters.faults import FaultyEmailSender
from shop.notification.adapters.retention import retained_tables
from shop.notification.adapters.sent_log import SqlSentLog
from shop.notification.adapters.smtp import SmtpEmailSender
from shop.notification.adapters.tracing import TracedEmailSender
from shop.notification.domain.invoice import InvoiceRenderer
from shop.notification.domain.rendering import EmailRenderer, ShopIdentity
from shop.notification.handlers import build_router
from shop.notification.internal import internal_routes
from shop.notification.ports import EmailSender
from shop.notification.service_layer.notifier import Notifier, message_id_domain
from shop.notification.settings import NotificationSettings

SERVICE: Final = "notification-service"
"""``service.name`` of its spans."""


def build_sender(settings: NotificationSettings) -> EmailSender:
    sender: EmailSender = SmtpEmailSender(settings.smtp)
    if settings.faults.enabled:
        sender = FaultyEmailSender(sender, settings.faults)
    return sender


def build_worker(
    settings: NotificationSettings,
    *,
    sender: EmailSender | None = None,
    health_port: int | None = None,
) -> Worker:
    """Consumes the order events and sends their e-mails (``sender`` replaces the
    configured provider, for tests that need to watch the sends); deletes old marks of sent
    e-mails when it holds the database's retention lock."""
    configure_logging(json=settings.log_json)
    configure_tracing(settings.tracing, service_name=SERVICE, process_kind="worker")
    # A connection per send in flight: each holds its e-mail's hold (a transaction) while
    # the provider takes the e-mail.
    engine = create_engine(
        settings.database_url,
        pool_size=settings.max_in_flight,
        timeouts=settings.database_timeouts,
    )
    shop = ShopIdentity(**settings.shop.model_dump())
    notifier = Notifier(
        SqlSentLog(session_factory(engine)),
        # Outermost, so that its CLIENT span covers the provider's whole latency.
        TracedEmailSender(sender or build_sender(settings)),
        EmailRenderer(shop),
        InvoiceRenderer(shop),
        message_id_domain=message_id_domain(settings.smtp.sender),
    )
    router = build_router(
        notifier, max_attempts=settings.max_attempts, max_in_flight=settings.max_in_flight
    )
    # One knob: the consumer takes in no more than its handlers may send at once, so a
    # shutdown never has a queue of taken-in messages to drain behind slow sends.
    messaging = settings.messaging.model_copy(update={"max_in_flight": settings.max_in_flight})
    metrics = Metrics()
    retention = Retention(
        asyncpg_dsn(settings.database_url),
        retained_tables(settings.retention),
        settings=settings.retention,
        metrics=metrics,
        name=SERVICE,
    )
    return Worker(
        messaging,
        create_transport(messaging),
        # A database restarting, or a lock held too long, fails every handler: that is no
        # message's fault.
        outage=unavailable,
        routers=[router],
        metrics=metrics,
        jobs=[retention.run],
        routes=internal_routes(session_factory(engine)),
        dead_letter_store=PostgresDeadLetterStore(session_factory(engine)),
        operator_token=(
            settings.operator_token.get_secret_value()
            if settings.operator_token is not None
            else None
        ),
        health_host=settings.worker_health_host,
        health_port=settings.worker_health_port if health_port is None else health_port,
        on_close=[engine.dispose],
    )
