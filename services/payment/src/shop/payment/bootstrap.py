"""The one place that wires concrete adapters: database and app. Unit tests wire fakes into
the app through ``build_app(settings, store=…)``."""

from __future__ import annotations

from fastapi import FastAPI

from shop.database import create_engine, session_factory
from shop.messaging.logging import configure_logging
from shop.payment.adapters.webhook_events import SqlWebhookStore
from shop.payment.api.app import create_app
from shop.payment.ports import WebhookStore
from shop.payment.settings import PaymentSettings


def build_app(settings: PaymentSettings, *, store: WebhookStore | None = None) -> FastAPI:
    configure_logging(json=settings.log_json)
    if store is not None:
        return create_app(settings, store)
    engine = create_engine(settings.database_url, pool_size=settings.db_pool_size)
    return create_app(settings, SqlWebhookStore(session_factory(engine)), on_close=[engine.dispose])
