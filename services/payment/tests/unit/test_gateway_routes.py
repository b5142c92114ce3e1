"""A gateway the shop does not use exposes no route: its webhook path answers 404 and the
OpenAPI document leaves it out; the routes of the gateways in use are served as before."""

from __future__ import annotations

import httpx
import pytest

from shop.contracts.base import Contract
from shop.payment.api.app import create_app
from shop.payment.domain.notifications import Notification
from shop.payment.settings import Gateway, PaymentSettings

SHOP_PATH = "/v1/payments/webhook"
MIDTRANS_PATH = "/v1/payments/webhooks/midtrans"
PATHS: dict[Gateway, str] = {"shop": SHOP_PATH, "midtrans": MIDTRANS_PATH}


class UnusedStore:
    """No request of these tests gets as far as keeping a notification."""

    async def take(self, notification: Notification, raw_body: bytes, command: Contract) -> bool:
        raise AssertionError("nothing is kept: every request here is refused before")

    async def check(self) -> None:
        return None


def client(*gateways: Gateway) -> httpx.AsyncClient:
    settings = PaymentSettings(environment="test", gateways=list(gateways), log_json=False)
    transport = httpx.ASGITransport(app=create_app(settings, UnusedStore()))
    return httpx.AsyncClient(transport=transport, base_url="http://payment.test")


async def paths(api: httpx.AsyncClient) -> set[str]:
    return set((await api.get("/openapi.json")).json()["paths"])


@pytest.mark.parametrize(("on", "off"), [("shop", "midtrans"), ("midtrans", "shop")])
async def test_a_gateway_that_is_off_answers_404_and_is_not_documented(
    on: Gateway, off: Gateway
) -> None:
    async with client(on) as api:
        refused = await api.post(PATHS[off], json={})
        served = await api.post(PATHS[on], json={})
        documented = await paths(api)

    assert refused.status_code == 404
    assert served.status_code in {401, 422}  # there, and refusing an unsigned body
    assert PATHS[off] not in documented
    assert PATHS[on] in documented


async def test_both_gateways_are_served_by_default() -> None:
    async with client("shop", "midtrans") as api:
        documented = await paths(api)

    assert {SHOP_PATH, MIDTRANS_PATH} <= documented
    assert PaymentSettings(environment="development").gateways == ["shop", "midtrans"]


async def test_the_health_routes_do_not_depend_on_the_gateways() -> None:
    async with client("midtrans") as api:
        assert (await api.get("/healthz")).status_code == 200
