"""The chaos load pays as a customer at a gateway that is slow under fire: what it sends
again, and when, must neither give up on a payment the gateway has not recorded yet nor pay
twice. The gateway is a stand-in here: these are the load's own decisions."""

from __future__ import annotations

import asyncio
import uuid

import httpx
import pytest

from shop.ops.payments import PaymentDue
from shop.ops.settings import OpsSettings
from shop.simulators import gateway

from .load import Load, PlannedOrder


class SlowGateway:
    """Takes the payment after the customer's call has timed out: until then, the charge
    is unknown to it (a 404)."""

    def __init__(self, unknown_for: int) -> None:
        self.unknown_for = unknown_for
        self.payments = 0
        self.lookups = 0
        self.notifications_asked = 0

    async def pay_at_gateway(self, *_args: object, **_kwargs: object) -> list[gateway.Answer]:
        self.payments += 1
        raise httpx.ReadTimeout("the gateway took the request and answered too late")

    async def charge_of(self, gateway_url: str, order_id: uuid.UUID) -> dict[str, object]:
        self.lookups += 1
        if self.lookups == 1:
            raise httpx.ConnectTimeout("the gateway, starved, took no connection in time")
        if self.lookups <= self.unknown_for:
            request = httpx.Request("GET", f"{gateway_url}/_simulator/charges/{order_id}")
            reply = httpx.Response(404, request=request, json={"detail": "no charge"})
            raise httpx.HTTPStatusError("404 Not Found", request=request, response=reply)
        return {"order_id": str(order_id)}

    async def notify_again(self, *_args: object, **_kwargs: object) -> list[gateway.Answer]:
        self.notifications_asked += 1
        return [gateway.Answer("settlement", 200, "{}")]

    def stand_in(self, monkeypatch: pytest.MonkeyPatch) -> None:
        for name in ("pay_at_gateway", "charge_of", "notify_again"):
            monkeypatch.setattr(gateway, name, getattr(self, name))


def an_order() -> PlannedOrder:
    order_id = uuid.uuid4()
    order = PlannedOrder(0, "pay", gateway.Format.SHOP, 1, [("SERUM-NIA-30", 1)], "token")
    order.id = order_id
    order.number = "SHOP-1"
    order.due = PaymentDue(order_id, "SHOP-1", 120_000, "IDR", "pending")
    return order


def test_a_payment_the_gateway_records_late_is_asked_about_again_not_paid_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    slow = SlowGateway(unknown_for=3)  # its first lookup times out, the next two 404
    slow.stand_in(monkeypatch)
    monkeypatch.setattr("tests.chaos.load._RETRY_PAUSE", 0.01)
    order = an_order()
    load = Load(OpsSettings(environment="test"), [order], rate=1)

    asyncio.run(load._pay(order))

    assert slow.payments == 1
    assert slow.lookups == 4
    assert slow.notifications_asked == 1
    # Only the payment and the one notification sent again reached payment-api.
    assert load.figures.begun["payment-api"] == 2


def test_a_payment_the_gateway_never_records_fails_the_run_saying_so(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    never = SlowGateway(unknown_for=10**9)
    never.stand_in(monkeypatch)
    monkeypatch.setattr("tests.chaos.load._RETRY_PAUSE", 0.01)
    monkeypatch.setattr("tests.chaos.load._GIVE_UP_AFTER", 0.1)
    order = an_order()
    load = Load(OpsSettings(environment="test"), [order], rate=1)

    with pytest.raises(AssertionError, match="the gateway never recorded the payment of SHOP-1"):
        asyncio.run(load._pay(order))
    assert never.payments == 1
    assert never.notifications_asked == 0
