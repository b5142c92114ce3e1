"""The console is ready when it can serve its pages: its own settings and sources. A service
it reads that is down shows on the pages, not in its readiness: an order-service outage is
when the operators need the console most."""

from __future__ import annotations

import uuid

import httpx

from shop.console.bootstrap import build_app
from shop.console.domain.orders import OrderSummary
from shop.ops.errors import Unreachable

from .browsing import log_in
from .fakes import ADMIN, PASSWORD, SETTINGS, FakeOrders, FakeShop

DOWN = Unreachable("order-service's worker", "http://order-worker:9101")


class OrdersThatCannotBeReached(FakeOrders):
    async def search(self, query: str, *, limit: int = 50) -> list[OrderSummary]:
        raise DOWN

    async def get(self, order_id: uuid.UUID) -> OrderSummary | None:
        raise DOWN


async def test_the_console_is_ready_while_order_service_is_down_and_says_what_it_checked() -> None:
    shop = FakeShop(orders=OrdersThatCannotBeReached())
    app = build_app(SETTINGS, sources=shop.sources())
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app), base_url="http://console.test"
    ) as client:
        ready = await client.get("/readyz")
        await log_in(client, ADMIN, PASSWORD)
        page = await client.get("/orders", params={"q": "SK-7KQ4"})

    assert ready.status_code == 200, ready.text
    assert ready.json() == {"status": "ready", "settings_and_sources": "ok"}
    # The outage is on the page the operator asked for instead.
    assert page.status_code == 503
    assert "cannot reach order-service&#39;s worker at http://order-worker:9101" in page.text
