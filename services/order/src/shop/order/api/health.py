"""Liveness, readiness (the orders' database answers) and metrics."""

from __future__ import annotations

from fastapi import Request

from shop.order.ports import Stores
from shop.web.health import operations_router


async def _database_ready(request: Request) -> None:
    stores: Stores = request.app.state.stores
    await stores.orders.check()


router = operations_router(_database_ready)
