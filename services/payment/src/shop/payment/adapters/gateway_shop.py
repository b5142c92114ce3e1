"""The shop's own gateway API as a :class:`~shop.payment.ports.PaymentGateway` (its
definition: payment-service's README, "The shop's gateway API"): ``GET
/v1/charges/{order_id}``, ``POST /v1/charges/{order_id}/refunds`` and ``POST
/v1/charges/{order_id}/expire``, with ``Authorization: Bearer <api key>``."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any, Final

import httpx

from shop.payment.adapters.gateway_http import document, request
from shop.payment.domain.errors import GatewayUnavailable
from shop.payment.domain.gateway import (
    ChargeState,
    GatewayPayment,
    GatewayReversal,
    RefundRequest,
    RefundResult,
    ReversalKind,
)
from shop.payment.domain.notifications import Provider

NAME: Final = "the shop's gateway"


class ShopGateway:
    provider = Provider.SHOP

    def __init__(
        self,
        base_url: str,
        api_key: str,
        *,
        timeout: float,
        client: httpx.AsyncClient | None = None,
    ) -> None:
        self.client = client or httpx.AsyncClient(
            base_url=base_url,
            timeout=timeout,
            headers={"Authorization": f"Bearer {api_key}", "Accept": "application/json"},
        )

    async def status(self, order_id: uuid.UUID) -> GatewayPayment | None:
        reply = await request(
            self.client, NAME, "GET", f"/v1/charges/{order_id}", missing_is_none=True
        )
        return None if reply is None else read_charge(order_id, document(reply, NAME))

    async def refund(self, refund: RefundRequest) -> RefundResult:
        reply = await request(
            self.client,
            NAME,
            "POST",
            f"/v1/charges/{refund.order_id}/refunds",
            json={
                "refund_key": refund.refund_key,
                "amount": refund.amount,
                "reason": refund.reason,
            },
        )
        assert reply is not None
        body = document(reply, NAME)
        try:
            return RefundResult(reference=str(body["id"]), amount=int(body["amount"]))
        except (KeyError, TypeError, ValueError) as error:
            raise GatewayUnavailable(f"{NAME}'s refund answer cannot be read: {error}") from None

    async def close(self, order_id: uuid.UUID) -> None:
        # A charge no longer pending is a 409, which ``request`` raises as GatewayRefused.
        await request(self.client, NAME, "POST", f"/v1/charges/{order_id}/expire")


def read_charge(order_id: uuid.UUID, body: dict[str, Any]) -> GatewayPayment:
    """The shop gateway's charge document in the shop's words; one that cannot be read is
    :class:`GatewayUnavailable`."""
    try:
        reversals = tuple(
            GatewayReversal(
                ReversalKind(entry["kind"]),
                str(entry["id"]),
                int(entry["amount"]),
                _time(entry.get("created_at")),
            )
            for entry in body.get("reversals", [])
        )
        return GatewayPayment(
            provider=Provider.SHOP,
            order_id=order_id,
            transaction_id=str(body["charge_id"]),
            status=str(body["status"]),
            state=ChargeState(body["status"]),
            amount=int(body["amount"]),
            currency=str(body["currency"]),
            reversals=reversals,
            settled_at=_time(body.get("settled_at")),
        )
    except (KeyError, TypeError, ValueError) as error:
        raise GatewayUnavailable(f"{NAME}'s charge cannot be read: {error!r}") from None


def _time(value: object) -> datetime | None:
    return datetime.fromisoformat(value) if isinstance(value, str) and value else None
