"""A payment gateway for development and tests: the notifications a gateway sends about one
payment, signed as each provider signs them, and posted to payment-service's webhooks.

Two formats, each built from its published definition and never from payment-service's
code: a real gateway does not run the shop's verifier, and a signer of its own is what
shows a verifier that has drifted from the definition.

- The shop's own format (payment-service's README): a JSON body ``{"event_id", "type",
  "created", "data": {"order_id", "amount", "currency", "provider_payment_id"}}`` and the
  header ``Payment-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<raw body>">``.
- Midtrans' HTTP notification: ``signature_key`` is the hex SHA-512 of ``order_id +
  status_code + gross_amount + server key``; ``status_code`` is 200 for a success, 201
  for a pending payment and 202 for a denied or failed one.

The gateway is told what it was asked to take (the order, its amount and currency) and the
keys it signs with; it reads nothing of the shop's.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Any, Final
from zoneinfo import ZoneInfo

import httpx

SHOP_WEBHOOK_PATH: Final = "/v1/payments/webhook"
MIDTRANS_WEBHOOK_PATH: Final = "/v1/payments/webhooks/midtrans"
SHOP_SIGNATURE_HEADER: Final = "Payment-Signature"

_MIDTRANS_STATUS_CODES: Final = {
    "settlement": "200",
    "capture": "200",
    "refund": "200",
    "partial_refund": "200",
    "chargeback": "200",
    "partial_chargeback": "200",
    "cancel": "200",
    "pending": "201",
    "authorize": "201",
}
JAKARTA: Final = ZoneInfo("Asia/Jakarta")
"""Midtrans writes its times without a zone, in Jakarta's (GMT+7)."""
_MIDTRANS_REFUSED: Final = "202"
_SEND_TIMEOUT: Final = 10.0
_NO_PEER: Final = "getpeername"
UNDELIVERED: Final = 0
"""The status of an answer that never came: the webhook could not be reached."""


class Format(StrEnum):
    SHOP = "shop"
    """The shop's own signed format (``Payment-Signature``)."""
    MIDTRANS = "midtrans"


@dataclass(frozen=True, slots=True)
class Payment:
    """The payment the gateway was asked to take."""

    order_id: uuid.UUID
    amount: int
    currency: str


@dataclass(frozen=True, slots=True)
class SigningKeys:
    webhook_secret: str
    """Signs the shop's format: one of payment-service's ``SHOP_PAYMENT_WEBHOOK_SECRETS``."""
    midtrans_server_key: str
    """Signs Midtrans' notifications: payment-service's ``SHOP_PAYMENT_MIDTRANS_SERVER_KEY``."""


@dataclass(frozen=True, slots=True)
class Notice:
    """One notification as the gateway sends it: where, and what."""

    path: str
    body: bytes
    headers: dict[str, str]
    label: str
    """Its kind and id (``payment.paid evt_…``, ``settlement 9aed…``)."""


@dataclass(frozen=True, slots=True)
class Answer:
    """What payment-service answered one notification."""

    notification: str
    """The notification's label."""
    status: int
    body: str

    @property
    def accepted(self) -> bool:
        return self.status == 200


def shop_signature(body: bytes, secret: str, timestamp: int) -> str:
    """The ``Payment-Signature`` header of ``body`` sent at ``timestamp``."""
    signed = f"{timestamp}.".encode() + body
    digest = hmac.new(secret.encode(), signed, hashlib.sha256).hexdigest()
    return f"t={timestamp},v1={digest}"


def midtrans_signature_key(
    order_id: str, status_code: str, gross_amount: str, server_key: str
) -> str:
    """The ``signature_key`` Midtrans puts in a notification."""
    text = order_id + status_code + gross_amount + server_key
    return hashlib.sha512(text.encode()).hexdigest()


def shop_notice(
    payment: Payment,
    secret: str,
    *,
    kind: str,
    amount: int,
    event_id: str,
    at: int,
    payment_id: str | None = None,
) -> Notice:
    """A notification in the shop's format: ``kind`` is ``payment.paid``,
    ``payment.failed``, ``payment.refunded`` or ``payment.charged_back``, ``at`` the time it
    is signed at (unix seconds), ``payment_id`` the gateway's charge."""
    body = json.dumps(
        {
            "event_id": event_id,
            "type": kind,
            "created": at,
            "data": {
                "order_id": str(payment.order_id),
                "amount": amount,
                "currency": payment.currency,
                "provider_payment_id": payment_id or f"pay_{payment.order_id.hex[:12]}",
            },
        }
    ).encode()
    headers = {
        SHOP_SIGNATURE_HEADER: shop_signature(body, secret, at),
        "Content-Type": "application/json",
    }
    return Notice(SHOP_WEBHOOK_PATH, body, headers, f"{kind} {event_id}")


def midtrans_status_code(status: str, fraud_status: str = "accept") -> str:
    """The ``status_code`` Midtrans gives a transaction in ``status``: 200 for money taken,
    201 for waiting (a capture held for a fraud review too), 202 for refused or expired."""
    if status == "capture" and fraud_status == "challenge":
        return "201"
    return _MIDTRANS_STATUS_CODES.get(status, _MIDTRANS_REFUSED)


def midtrans_notice(
    payment: Payment,
    server_key: str,
    *,
    status: str,
    amount: int,
    transaction_id: str,
    reversed_amount: int = 0,
    payment_type: str = "bank_transfer",
    fraud_status: str = "accept",
) -> Notice:
    """Midtrans' notification that ``transaction_id`` is now ``status`` (``pending``,
    ``settlement``, ``deny``, ``partial_refund``…); a refund's carries ``refund_amount``,
    the total refunded so far."""
    order_id = str(payment.order_id)
    status_code = midtrans_status_code(status, fraud_status)
    gross_amount = f"{amount}.00"
    payload: dict[str, Any] = {
        "transaction_time": datetime.now(JAKARTA).strftime("%Y-%m-%d %H:%M:%S"),
        "transaction_status": status,
        "transaction_id": transaction_id,
        "status_code": status_code,
        "signature_key": midtrans_signature_key(order_id, status_code, gross_amount, server_key),
        "payment_type": payment_type,
        "order_id": order_id,
        "gross_amount": gross_amount,
        "currency": payment.currency,
        "fraud_status": fraud_status,
    }
    if reversed_amount:
        payload["refund_amount"] = f"{reversed_amount}.00"
    return Notice(
        MIDTRANS_WEBHOOK_PATH,
        json.dumps(payload).encode(),
        {"Content-Type": "application/json"},
        f"{status} {transaction_id}",
    )


def notices(
    payment: Payment,
    keys: SigningKeys,
    *,
    fmt: Format = Format.SHOP,
    amount: int | None = None,
    fail: bool = False,
    times: int = 1,
    out_of_order: bool = False,
) -> list[Notice]:
    """What the gateway sends for ``payment``, for ``amount`` instead of the payment's when
    given: in the shop's format the outcome alone, in Midtrans' a pending notice then the
    outcome; each ``times`` over. ``out_of_order`` sends them as a network may deliver
    them: Midtrans' outcome before its pending notice, or in the shop's format the success
    before the failure of an earlier attempt."""
    if times < 1:
        raise ValueError(f"times must be at least 1, not {times}")
    paid = payment.amount if amount is None else amount
    stamp = uuid.uuid4().hex[:10]
    sequence: list[Notice]
    if fmt == Format.SHOP:
        now = int(time.time())
        kind = "payment.failed" if fail else "payment.paid"
        sequence = [
            shop_notice(
                payment,
                keys.webhook_secret,
                kind=kind,
                amount=paid,
                event_id=f"evt_{stamp}",
                at=now,
            )
        ]
        if out_of_order:
            earlier = shop_notice(
                payment,
                keys.webhook_secret,
                kind="payment.failed",
                amount=paid,
                event_id=f"evt_{stamp}_earlier",
                at=now - 60,
            )
            sequence.append(earlier)
    else:
        transaction = str(uuid.uuid4())
        outcome = "deny" if fail else "settlement"
        sequence = [
            midtrans_notice(
                payment, keys.midtrans_server_key, status=s, amount=paid, transaction_id=transaction
            )
            for s in ("pending", outcome)
        ]
        if out_of_order:
            sequence.reverse()
    return [notice for notice in sequence for _ in range(times)]


async def post(client: httpx.AsyncClient, notice: Notice) -> Answer:
    """Post one notice with ``client`` (its base URL payment-service's API). A webhook that
    cannot be reached is an answer too: status 0, and why."""
    try:
        reply = await client.post(notice.path, content=notice.body, headers=notice.headers)
    except httpx.TransportError as error:
        return Answer(notice.label, UNDELIVERED, f"{type(error).__name__}: {error}")
    except AttributeError as error:
        # httpcore asks anyio for the peer's address the moment it has connected; a
        # payment-service killed in that instant leaves no socket to ask, and anyio fails
        # on None. That is a webhook that could not be reached, as a reset would be.
        if _NO_PEER not in str(error):
            raise
        return Answer(notice.label, UNDELIVERED, f"{type(error).__name__}: {error}")
    return Answer(notice.label, reply.status_code, reply.text)


async def send(url: str, sequence: Sequence[Notice], *, concurrently: bool = False) -> list[Answer]:
    """Post ``sequence`` to payment-service's API at ``url``: one after the other, or all at
    once (as a gateway retrying on a slow answer does); the answers in the same order."""
    async with httpx.AsyncClient(base_url=url, timeout=_SEND_TIMEOUT) as client:
        if concurrently:
            return list(await asyncio.gather(*(post(client, notice) for notice in sequence)))
        return [await post(client, notice) for notice in sequence]


# -- the gateway as a server (shop.simulators.gateway_server): what a customer or a bank does --


async def _control(gateway_url: str, path: str, body: dict[str, Any]) -> list[Answer]:
    async with httpx.AsyncClient(base_url=gateway_url, timeout=_SEND_TIMEOUT * 3) as client:
        reply = await client.post(f"/_simulator{path}", json=body)
    reply.raise_for_status()
    return [Answer(a["notification"], a["status"], a["body"]) for a in reply.json()["answers"]]


async def pay_at_gateway(
    gateway_url: str,
    payment: Payment,
    *,
    fmt: Format = Format.SHOP,
    amount: int | None = None,
    fail: bool = False,
    outcome: str | None = None,
    times: int = 1,
    out_of_order: bool = False,
    concurrently: bool = False,
    notify: bool = True,
    notify_after: float = 0,
    resend: bool = True,
    method: str | None = None,
    in_review: bool = False,
) -> list[Answer]:
    """The customer pays ``payment`` at the development gateway (``amount`` instead of the
    payment's when given): the gateway records the charge and sends its notifications as
    :func:`notices` would, and answers what payment-service's webhook said to each. Not
    ``notify``: the notifications are lost (reconciliation finds the charge);
    ``notify_after``: held back that many seconds. In Midtrans' format ``method`` is the
    ``payment_type`` (a card for a capture, else GoPay, unless told) and ``in_review`` holds
    a capture for a fraud review (``challenge``)."""
    chosen = outcome or ("deny" if fail else "settlement")
    return await _control(
        gateway_url,
        "/charges",
        {
            "order_id": str(payment.order_id),
            "amount": payment.amount if amount is None else amount,
            "currency": payment.currency,
            "format": fmt.value,
            "outcome": chosen,
            "times": times,
            "out_of_order": out_of_order,
            "concurrently": concurrently,
            "notify": notify,
            "notify_after": notify_after,
            "resend": resend,
            "method": method,
            "fraud": "challenge" if in_review else "accept",
        },
    )


async def charge_back(
    gateway_url: str, order_id: uuid.UUID, amount: int | None = None, *, notify: bool = True
) -> list[Answer]:
    """The customer's bank takes ``amount`` back (all that is left when None)."""
    body = {"amount": amount, "notify": notify}
    return await _control(gateway_url, f"/charges/{order_id}/chargeback", body)


async def refund_at_gateway(
    gateway_url: str, order_id: uuid.UUID, amount: int | None = None, *, notify: bool = True
) -> list[Answer]:
    """Someone refunds ``amount`` from the gateway's own dashboard, not through the shop."""
    body = {"amount": amount, "notify": notify}
    return await _control(gateway_url, f"/charges/{order_id}/refund", body)


async def cancel_capture(
    gateway_url: str, order_id: uuid.UUID, *, notify: bool = True
) -> list[Answer]:
    """A card capture is cancelled before it settles: the money goes back."""
    return await _control(gateway_url, f"/charges/{order_id}/cancel", {"notify": notify})


async def notify_again(
    gateway_url: str,
    order_id: uuid.UUID,
    *,
    every: bool = False,
    concurrently: bool = False,
    resend: bool = True,
) -> list[Answer]:
    """The gateway sends the charge's last notification again, word for word (``every``:
    all those of its latest change, repeats included; ``concurrently``: all at once; not
    ``resend``: each posted once, its answer as it came)."""
    return await _control(
        gateway_url,
        f"/charges/{order_id}/notify",
        {"every": every, "concurrently": concurrently, "resend": resend},
    )


def refunds_of(charge: dict[str, Any]) -> list[int]:
    """The amounts a ledger entry (:func:`charge_of`) lists as refunded, in either format."""
    refunds = charge.get("refunds") or [
        r for r in charge.get("reversals", []) if r.get("kind") == "refund"
    ]
    return [int(float(r.get("refund_amount", r.get("amount", 0)))) for r in refunds]


async def charge_of(gateway_url: str, order_id: uuid.UUID) -> dict[str, Any]:
    """The gateway's record of the order's charge, as its own API shows it."""
    async with httpx.AsyncClient(base_url=gateway_url, timeout=_SEND_TIMEOUT) as client:
        reply = await client.get(f"/_simulator/charges/{order_id}")
    reply.raise_for_status()
    return dict(reply.json())
