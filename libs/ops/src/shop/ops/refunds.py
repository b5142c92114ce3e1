"""A refund a person made outside the gateway, recorded in payment-service: a late bank
transfer Midtrans cannot refund through its API is given back by hand, and the payment
stays ``refund_due`` (flagged ``refund_refused``) until this says so. payment-service's
worker records it (``POST /refunds/by-hand`` on its port) once per reference and tells the
order and the customer as of any other refund."""

from __future__ import annotations

from dataclasses import dataclass

from shop.ops.internal import operator_port
from shop.ops.settings import PAYMENT_SERVICE, OpsSettings
from shop.ops.timeline import resolve_order_id


@dataclass(frozen=True, slots=True)
class RefundByHand:
    order_id: str
    reference: str
    status: str
    """The payment's status once the refund is recorded (``refunded`` when all is back)."""


async def record_refund_by_hand(
    settings: OpsSettings, order: str, *, reference: str, amount: int | None = None
) -> RefundByHand:
    """Record that ``amount`` (all that is due when None) of the order's payment (its id or
    number) was given back by hand, under the bank's ``reference``."""
    order_id = await resolve_order_id(settings, order)
    params: dict[str, str] = {"order_id": str(order_id), "reference": reference}
    if amount is not None:
        params["amount"] = str(amount)
    async with operator_port(settings, PAYMENT_SERVICE) as payments:
        body = await payments.post("/refunds/by-hand", params=params)
    return RefundByHand(body["order_id"], body["reference"], body["status"])
