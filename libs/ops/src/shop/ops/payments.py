"""Paying an order as a customer would: at the development payment gateway
(:mod:`shop.simulators.gateway_server`, ``SHOP_OPS_GATEWAY_URL``), for the amount
payment-service says the order is open for (its internal API). The gateway records the charge
in its ledger (what payment-service's worker asks its status API about) and notifies
payment-service's webhooks as it would: the gateway signs them with its own keys, and no
secret of payment-service is held here."""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Final

import httpx

from shop.ops.errors import OpsError
from shop.ops.http import reaching
from shop.ops.internal import operator_port, quoted
from shop.ops.settings import PAYMENT_SERVICE, OpsSettings
from shop.simulators import gateway
from shop.simulators.gateway import Answer

_WAIT_INTERVAL: Final = 0.2
GATEWAY: Final = "the development payment gateway"

Provider = gateway.Format
"""Whose notifications to send: the shop's own signed format, or Midtrans'."""


class NoPaymentOpened(OpsError):
    """payment-service has opened no payment for the order (not yet, or never)."""


@dataclass(frozen=True, slots=True)
class PaymentDue:
    """The payment payment-service opened for an order, as its internal API tells it."""

    order_id: uuid.UUID
    order_number: str
    amount: int
    currency: str
    status: str


def due_of(payment: Mapping[str, Any]) -> PaymentDue:
    """A payment as payment-service's internal API describes it."""
    return PaymentDue(
        order_id=uuid.UUID(str(payment["order_id"])),
        order_number=str(payment["order_number"]),
        amount=int(payment["amount"]),
        currency=str(payment["currency"]),
        status=str(payment["status"]),
    )


async def payment_due(settings: OpsSettings, order: str, *, wait: float = 0.0) -> PaymentDue:
    """The payment of the order ``order`` (its id or number), waiting up to ``wait``
    seconds for payment-service to open it (it does once the order's OrderCreated comes)."""
    if not order.strip():
        raise OpsError("name the order: its id or its number")
    deadline = time.monotonic() + wait
    async with operator_port(settings, PAYMENT_SERVICE) as payments:
        while True:
            found = await payments.get(f"/internal/v1/orders/{quoted(order)}/payments")
            if found["payments"]:
                return due_of(found["payments"][0])
            if time.monotonic() >= deadline:
                raise NoPaymentOpened(
                    f"payment-service has opened no payment for order {order!r} "
                    "(has it consumed the order's OrderCreated yet?)"
                )
            await asyncio.sleep(_WAIT_INTERVAL)


async def pay_at_gateway(
    settings: OpsSettings,
    due: PaymentDue,
    *,
    provider: Provider = Provider.SHOP,
    amount: int | None = None,
    fail: bool = False,
    repeat: int = 1,
    out_of_order: bool = False,
) -> list[Answer]:
    """The customer pays ``due`` (``amount`` instead when given) at the development gateway
    (``SHOP_OPS_GATEWAY_URL``): it records the charge and notifies payment-service's webhook,
    each notification ``repeat`` times (at once when more than one); the webhook's answers."""
    if settings.gateway_url is None:
        raise OpsError(f"no {GATEWAY} to pay at: set SHOP_OPS_GATEWAY_URL (make run writes it)")
    with reaching(GATEWAY, settings.gateway_url), _refusal_explained():
        return await gateway.pay_at_gateway(
            settings.gateway_url,
            gateway.Payment(due.order_id, due.amount, due.currency),
            fmt=provider,
            amount=amount,
            fail=fail,
            times=repeat,
            out_of_order=out_of_order,
            concurrently=repeat > 1,
        )


@contextlib.contextmanager
def _refusal_explained() -> Iterator[None]:
    try:
        yield
    except httpx.HTTPStatusError as error:
        raise OpsError(
            f"{GATEWAY} refused: {error.response.status_code} {error.response.text[:300]}"
        ) from error


async def pay(
    settings: OpsSettings,
    order: str,
    *,
    provider: Provider = Provider.SHOP,
    wrong_amount: bool = False,
    repeat: int = 1,
    fail: bool = False,
    out_of_order: bool = False,
    wait: float = 10.0,
) -> tuple[PaymentDue, list[Answer]]:
    """Pay ``order`` (its id or number) at the development gateway, which records the charge
    and notifies payment-service's webhook; the answers are the webhook's. ``wrong_amount``
    pays one more than is due (never applied: a dead letter with the reason), ``repeat``
    sends each notification that many times at once (applied once), ``fail`` is a failed
    payment, ``out_of_order`` the notifications in the order a network may deliver them."""
    due = await payment_due(settings, order, wait=wait)
    if repeat < 1:
        raise OpsError("--repeat must be at least 1")
    answers = await pay_at_gateway(
        settings,
        due,
        provider=provider,
        amount=due.amount + 1 if wrong_amount else None,
        fail=fail,
        repeat=repeat,
        out_of_order=out_of_order,
    )
    return due, answers
