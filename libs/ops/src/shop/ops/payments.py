"""Paying an order as a payment gateway would: the notifications are built by
payment-service's gateway simulator (:mod:`shop.payment.gateway`), signed with the secrets
of ``SHOP_OPS_*``, for the amount the payment-service's own database says the order is
open for, and sent to its webhooks."""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Final

import httpx

from shop.ops.databases import connected
from shop.ops.errors import OpsError
from shop.ops.http import reaching
from shop.ops.settings import PAYMENT_SERVICE, OpsSettings
from shop.payment import gateway
from shop.payment.settings import PaymentSettings

_WAIT_INTERVAL: Final = 0.2


class Provider(StrEnum):
    SHOP = "shop"
    """The shop's own signed format (``Payment-Signature``)."""
    MIDTRANS = "midtrans"


@dataclass(frozen=True, slots=True)
class PaymentDue:
    """The payment payment-service opened for an order, as its database holds it."""

    order_id: uuid.UUID
    order_number: str
    amount: int
    currency: str
    status: str


@dataclass(frozen=True, slots=True)
class WebhookAnswer:
    """What payment-service answered one notification."""

    notification: str
    """The notification's kind and id (``payment.paid evt_…``)."""
    status: int
    body: str

    @property
    def accepted(self) -> bool:
        return self.status == 200


_FIND = """
    SELECT order_id, order_number, amount, currency, status FROM payments
    WHERE order_number = $1 OR order_id = $2
"""


def _due(row: Any) -> PaymentDue:
    return PaymentDue(
        order_id=uuid.UUID(str(row["order_id"])),
        order_number=row["order_number"],
        amount=int(row["amount"]),
        currency=row["currency"],
        status=row["status"],
    )


async def payment_due(settings: OpsSettings, order: str, *, wait: float = 0.0) -> PaymentDue:
    """The payment of the order ``order`` (its id or number), waiting up to ``wait``
    seconds for payment-service to open it (it does once the order's OrderCreated comes)."""
    order_id = None
    with contextlib.suppress(ValueError):
        order_id = uuid.UUID(order)
    deadline = time.monotonic() + wait
    async with connected(settings, PAYMENT_SERVICE) as connection:
        while True:
            row = await connection.fetchrow(_FIND, order.strip().upper(), order_id)
            if row is not None:
                return _due(row)
            if time.monotonic() >= deadline:
                raise OpsError(
                    f"payment-service has opened no payment for order {order!r} "
                    "(has it consumed the order's OrderCreated yet?)"
                )
            await asyncio.sleep(_WAIT_INTERVAL)


def gateway_settings(settings: OpsSettings) -> PaymentSettings:
    """What the gateway simulator signs with, and nothing else of payment-service's
    settings (or of this machine's ``SHOP_PAYMENT_*`` environment)."""
    return PaymentSettings.model_construct(
        webhook_secrets=[settings.payment_webhook_secret],
        midtrans_server_key=settings.midtrans_server_key,
    )


def notices(
    settings: OpsSettings,
    due: PaymentDue,
    *,
    provider: Provider = Provider.SHOP,
    amount: int | None = None,
    fail: bool = False,
    repeat: int = 1,
) -> list[gateway.Notice]:
    """The notifications a gateway sends for one payment of ``due`` (for ``amount``
    instead of the amount due when given), each ``repeat`` times."""
    if repeat < 1:
        raise OpsError("--repeat must be at least 1")
    return gateway.notices(
        gateway_settings(settings),
        gateway.Order(due.order_id, due.amount, due.currency),
        fmt=gateway.Format(provider.value),
        amount=due.amount if amount is None else amount,
        fail=fail,
        times=repeat,
        out_of_order=False,
    )


async def send_notices(
    client: httpx.AsyncClient, settings: OpsSettings, sequence: list[gateway.Notice]
) -> list[WebhookAnswer]:
    """Post ``sequence`` to payment-service's webhooks, one after the other."""
    answers = []
    for notice in sequence:
        with reaching(PAYMENT_SERVICE, settings.payment_api_url):
            reply = await client.post(notice.path, content=notice.body, headers=notice.headers)
        answers.append(WebhookAnswer(notice.label, reply.status_code, reply.text))
    return answers


async def pay(
    settings: OpsSettings,
    order: str,
    *,
    provider: Provider = Provider.SHOP,
    wrong_amount: bool = False,
    repeat: int = 1,
    fail: bool = False,
    wait: float = 10.0,
) -> tuple[PaymentDue, list[WebhookAnswer]]:
    """Pay ``order`` (its id or number) through payment-service's webhook, as the
    gateway simulator does: ``wrong_amount`` pays one more than is due (never applied: a
    dead letter with the reason), ``repeat`` sends each notification that many times at
    once (applied once), ``fail`` sends a failed payment."""
    due = await payment_due(settings, order, wait=wait)
    sequence = notices(
        settings,
        due,
        provider=provider,
        amount=due.amount + 1 if wrong_amount else None,
        fail=fail,
        repeat=repeat,
    )
    with reaching(PAYMENT_SERVICE, settings.payment_api_url):
        sent = await gateway.send(settings.payment_api_url, sequence, concurrently=repeat > 1)
    return due, [WebhookAnswer(label, status, text) for label, status, text in sent]
