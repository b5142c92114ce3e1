"""Midtrans' Core API as a :class:`~shop.payment.ports.PaymentGateway`: ``GET
/v2/{order_id}/status`` and ``POST /v2/{order_id}/refund``, the server key as the basic
auth user name with an empty password.

Midtrans answers every call with a JSON body whose ``status_code`` (a string) may differ
from the HTTP status: a missing transaction is ``"404"`` in the body, a refused refund a
4xx code in the body. Both are read."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any, Final
from zoneinfo import ZoneInfo

import httpx

from shop.payment.adapters.gateway_http import document, request
from shop.payment.domain.errors import GatewayRefused, GatewayUnavailable, InvalidNotification
from shop.payment.domain.gateway import (
    ChargeState,
    GatewayPayment,
    GatewayReversal,
    RefundRequest,
    RefundResult,
    ReversalKind,
)
from shop.payment.domain.midtrans import whole_rupiah
from shop.payment.domain.notifications import Provider

NAME: Final = "Midtrans"
_JAKARTA: Final = ZoneInfo("Asia/Jakarta")
"""Midtrans writes its times without a zone, in Jakarta's (GMT+7)."""

_STATES: Final = {
    "settlement": ChargeState.PAID,
    "refund": ChargeState.PAID,
    "partial_refund": ChargeState.PAID,
    "chargeback": ChargeState.PAID,
    "partial_chargeback": ChargeState.PAID,
    "pending": ChargeState.PENDING,
    "authorize": ChargeState.PENDING,
    "deny": ChargeState.FAILED,
    "expire": ChargeState.FAILED,
    "failure": ChargeState.FAILED,
}
_CHARGEBACK_STATUSES: Final = frozenset({"chargeback", "partial_chargeback"})


class MidtransGateway:
    provider = Provider.MIDTRANS

    def __init__(
        self,
        base_url: str,
        server_key: str,
        *,
        timeout: float,
        client: httpx.AsyncClient | None = None,
    ) -> None:
        self.client = client or httpx.AsyncClient(
            base_url=base_url,
            auth=httpx.BasicAuth(server_key, ""),
            timeout=timeout,
            headers={"Accept": "application/json"},
        )

    async def status(self, order_id: uuid.UUID) -> GatewayPayment | None:
        reply = await request(
            self.client, NAME, "GET", f"/v2/{order_id}/status", missing_is_none=True
        )
        if reply is None:
            return None
        body = document(reply, NAME)
        code = str(body.get("status_code", ""))
        if code == "404":
            return None
        if code.startswith(("5", "429")):
            raise GatewayUnavailable(f"{NAME} answered status_code {code}")
        if code.startswith("4"):
            raise GatewayRefused(
                f"{NAME} refused the status call: {code} {body.get('status_message')}"
            )
        return read_status(order_id, body)

    async def refund(self, refund: RefundRequest) -> RefundResult:
        reply = await request(
            self.client,
            NAME,
            "POST",
            f"/v2/{refund.order_id}/refund",
            json={
                "refund_key": refund.refund_key,
                "amount": refund.amount,
                "reason": refund.reason,
            },
        )
        assert reply is not None
        body = document(reply, NAME)
        code = str(body.get("status_code", ""))
        if code.startswith("5"):
            raise GatewayUnavailable(f"{NAME} answered status_code {code} to the refund")
        if code != "200":
            raise GatewayRefused(f"{NAME} refused the refund: {code} {body.get('status_message')}")
        return RefundResult(
            reference=str(body.get("refund_chargeback_id") or refund.refund_key),
            amount=_rupiah(body.get("refund_amount", refund.amount)),
        )


def read_status(order_id: uuid.UUID, body: dict[str, Any]) -> GatewayPayment:
    """Midtrans' status document in the shop's words. A document that cannot be read is
    :class:`GatewayUnavailable`: Midtrans misbehaving is no reason to decide anything."""
    try:
        status = str(body["transaction_status"])
        transaction_id = str(body["transaction_id"])
        amount = _rupiah(body["gross_amount"])
        currency = str(body.get("currency") or "IDR")
        state = _state(status, body.get("fraud_status"), captured="capture" in _history(body))
        reversals = _all_reversals(body, status, transaction_id, amount)
    except (KeyError, InvalidNotification) as error:
        raise GatewayUnavailable(f"{NAME}'s status cannot be read: {error}") from None
    return GatewayPayment(
        provider=Provider.MIDTRANS,
        order_id=order_id,
        transaction_id=transaction_id,
        status=status,
        state=state,
        amount=amount,
        currency=currency,
        reversals=tuple(reversals),
        settled_at=_time(body.get("settlement_time")),
    )


def _all_reversals(
    body: dict[str, Any], status: str, transaction_id: str, amount: int
) -> list[GatewayReversal]:
    reversals = [
        *_reversals(body.get("refunds"), ReversalKind.REFUND),
        *_reversals(body.get("chargebacks"), ReversalKind.CHARGEBACK),
    ]
    if status in _CHARGEBACK_STATUSES and not any(
        r.kind == ReversalKind.CHARGEBACK for r in reversals
    ):
        taken = _rupiah(body.get("chargeback_amount") or amount - sum(r.amount for r in reversals))
        # One reference whatever the status reads (partial_chargeback, then chargeback):
        # the same chargeback read twice is recorded once.
        reversals.append(
            GatewayReversal(ReversalKind.CHARGEBACK, f"{transaction_id}:chargeback", taken)
        )
    return reversals


def _state(status: str, fraud_status: object, *, captured: bool) -> ChargeState:
    if status == "capture":
        if fraud_status == "deny":
            return ChargeState.FAILED
        return ChargeState.PAID if fraud_status in ("accept", None) else ChargeState.PENDING
    if status == "cancel":
        # Cancelled after its capture, the money was taken and given back; before, never taken.
        return ChargeState.VOIDED if captured else ChargeState.FAILED
    try:
        return _STATES[status]
    except KeyError:
        raise GatewayUnavailable(
            f"{NAME} answered an unknown transaction_status {status!r}"
        ) from None


def _history(body: dict[str, Any]) -> set[str]:
    """What the transaction went through, as far as the document tells (a captured card
    carries an approval code and ``channel_response_code`` 00)."""
    seen = {str(body.get("transaction_status"))}
    if body.get("payment_type") == "credit_card" and body.get("approval_code"):
        seen.add("capture")
    return seen


def _reversals(entries: object, kind: ReversalKind) -> list[GatewayReversal]:
    if not isinstance(entries, list):
        return []
    found = []
    for entry in entries:
        if not isinstance(entry, dict):
            continue
        reference = entry.get("refund_chargeback_id") or entry.get("refund_key")
        if reference is None:
            continue
        found.append(
            GatewayReversal(
                kind,
                str(reference),
                _rupiah(entry.get("refund_amount", 0)),
                _time(entry.get("created_at")),
            )
        )
    return found


def _rupiah(value: object) -> int:
    return whole_rupiah(str(value))


def _time(value: object) -> datetime | None:
    if not isinstance(value, str) or not value:
        return None
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        return None
    return moment.replace(tzinfo=_JAKARTA).astimezone(UTC) if moment.tzinfo is None else moment
