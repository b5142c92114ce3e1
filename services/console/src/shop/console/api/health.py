"""Liveness, readiness (order-service's internal API answers) and metrics, without a login."""

from __future__ import annotations

from fastapi import Request

from shop.console.ports import Sources
from shop.web.health import operations_router


async def _orders_ready(request: Request) -> None:
    sources: Sources = request.app.state.sources
    await sources.orders.check()


router = operations_router(_orders_ready)
