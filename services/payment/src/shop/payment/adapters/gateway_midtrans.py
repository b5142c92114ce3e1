"""Midtrans' Core API as a :class:`~shop.payment.ports.PaymentGateway`: ``GET
/v2/{order_id}/status``, ``POST /v2/{order_id}/refund``, ``/cancel`` and ``/expire``, the
server key as the basic auth user name with an empty password.

Midtrans refunds only a settled charge, and only for some payment methods: a card capture
not settled yet is given back by cancelling it (its Cancel API, the whole amount), and a
method it cannot refund (a bank transfer) is refused here with what a person must do.

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
_UNSETTLED: Final = frozenset({"capture", "authorize"})
"""Card charges Midtrans gives back by cancelling them (its refund API refuses them)."""
REFUNDABLE_METHODS: Final = frozenset(
    {"credit_card", "gopay", "shopeepay", "dana", "ovo", "qris", "kredivo", "akulaku"}
)
"""The payment types Midtrans' refund API accepts; the rest (bank transfers, convenience
stores) are given back by hand."""


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
        body = await self._status_document(order_id)
        return None if body is None else read_status(order_id, body)

    async def refund(self, refund: RefundRequest) -> RefundResult:
        charge = await self._status_document(refund.order_id)
        if charge is None:
            raise GatewayRefused(f"{NAME} has no transaction for order {refund.order_id}")
        if charge.get("transaction_status") in _UNSETTLED:
            return await self._cancel(refund, charge)
        method = str(charge.get("payment_type"))
        if method not in REFUNDABLE_METHODS:
            raise GatewayRefused(
                f"{NAME} cannot refund a {method} payment through its API: "
                "give the money back by hand, then record it with shopctl refunded-by-hand"
            )
        body = await self._post(
            f"/v2/{refund.order_id}/refund",
            {"refund_key": refund.refund_key, "amount": refund.amount, "reason": refund.reason},
            success=("200",),
        )
        return RefundResult(
            reference=str(body.get("refund_chargeback_id") or refund.refund_key),
            amount=_rupiah(body.get("refund_amount", refund.amount)),
        )

    async def close(self, order_id: uuid.UUID) -> None:
        # Midtrans expires only a pending transaction (answering status_code 407); a card
        # authorised and not captured is let go by cancelling it.
        charge = await self._status_document(order_id)
        status = None if charge is None else charge.get("transaction_status")
        if status == "pending":
            await self._post(f"/v2/{order_id}/expire", None, success=("407", "200"))
        elif status == "authorize":
            await self._post(f"/v2/{order_id}/cancel", None, success=("200",))
        else:
            raise GatewayRefused(f"{NAME}'s transaction for order {order_id} is {status}")

    async def _status_document(self, order_id: uuid.UUID) -> dict[str, Any] | None:
        """The status document; None when Midtrans has no transaction for the order."""
        reply = await request(
            self.client, NAME, "GET", f"/v2/{order_id}/status", missing_is_none=True
        )
        if reply is None:
            return None
        body = document(reply, NAME)
        if str(body.get("status_code")) == "404":
            return None
        # 201 pending, 202 denied or failed, 407 expired: each a transaction found.
        self._check(body, "the status call", success=("200", "201", "202", "407"))
        return body

    async def _cancel(self, refund: RefundRequest, charge: dict[str, Any]) -> RefundResult:
        try:
            taken = _rupiah(charge["gross_amount"])
            transaction_id = str(charge["transaction_id"])
        except (KeyError, InvalidNotification) as error:
            raise GatewayUnavailable(f"{NAME}'s status cannot be read: {error}") from None
        if refund.amount != taken:
            raise GatewayRefused(
                f"{NAME} gives back an unsettled card payment only whole, by cancelling it: "
                f"{refund.amount} of {taken} asked"
            )
        await self._post(f"/v2/{refund.order_id}/cancel", None, success=("200",))
        return RefundResult(reference=f"{transaction_id}:cancel", amount=taken)

    async def _post(
        self, path: str, json: dict[str, Any] | None, *, success: tuple[str, ...]
    ) -> dict[str, Any]:
        reply = await request(self.client, NAME, "POST", path, json=json)
        assert reply is not None
        body = document(reply, NAME)
        self._check(body, f"POST {path}", success=success)
        return body

    @staticmethod
    def _check(body: dict[str, Any], what: str, *, success: tuple[str, ...]) -> None:
        """Midtrans' verdict is the body's ``status_code``, whatever the HTTP status."""
        code = str(body.get("status_code", ""))
        if code in success:
            return
        if not code or code.startswith("5") or code == "429":
            raise GatewayUnavailable(f"{NAME} answered status_code {code} to {what}")
        raise GatewayRefused(f"{NAME} refused {what}: {code} {body.get('status_message')}")


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
        in_review=status == "capture" and body.get("fraud_status") == "challenge",
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
        # Cancelled after its capture, the money was taken and given back; before, never
        # taken. A capture denied after a fraud review was never accepted: never taken.
        return ChargeState.VOIDED if captured and fraud_status != "deny" else ChargeState.FAILED
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
