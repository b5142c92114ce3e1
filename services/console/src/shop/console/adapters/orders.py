"""order-service's orders, read through its internal API (``/internal/v1/orders`` on its
worker's port, with the operator token): the console looks orders up by id or number and
shows their status; it never changes one (that is order-service's alone), and it never
reads order-service's tables."""

from __future__ import annotations

import dataclasses
import uuid
from datetime import datetime
from typing import Any, Final

from shop.console.domain.orders import OrderSummary
from shop.ops.internal import NotFoundThere, operator_port
from shop.ops.settings import ORDER_SERVICE, OpsSettings

ORDERS_PATH: Final = "/internal/v1/orders"
_TIMES: Final = frozenset({"created_at", "updated_at", "paid_at", "cancelled_at"})
_FIELDS: Final = frozenset(field.name for field in dataclasses.fields(OrderSummary))


def summary_of(order: dict[str, Any]) -> OrderSummary:
    """An order as order-service's internal API describes it (the fields the console
    shows; any other is left out)."""
    values = {name: value for name, value in order.items() if name in _FIELDS}
    values["id"] = uuid.UUID(values["id"])
    for name in _TIMES:
        if values.get(name) is not None:
            values[name] = datetime.fromisoformat(values[name])
    return OrderSummary(**values)


class ServiceOrderDirectory:
    """The orders order-service's internal API answers with."""

    def __init__(self, settings: OpsSettings) -> None:
        self.settings = settings

    async def search(self, query: str, *, limit: int = 50) -> list[OrderSummary]:
        params = {"limit": str(limit)}
        if query.strip():
            params["q"] = query.strip()
        async with operator_port(self.settings, ORDER_SERVICE) as orders:
            found = await orders.get(ORDERS_PATH, params)
        return [summary_of(order) for order in found["orders"]]

    async def get(self, order_id: uuid.UUID) -> OrderSummary | None:
        async with operator_port(self.settings, ORDER_SERVICE) as orders:
            try:
                found = await orders.get(f"{ORDERS_PATH}/{order_id}")
            except NotFoundThere:
                return None
        return summary_of(found["order"])
