"""Liveness, readiness (the payments' database answers) and metrics."""

from __future__ import annotations

from fastapi import Request

from shop.payment.ports import WebhookStore
from shop.web.health import operations_router


async def _database_ready(request: Request) -> None:
    store: WebhookStore = request.app.state.store
    await store.check()


router = operations_router(_database_ready)
