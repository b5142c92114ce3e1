"""The development payment gateway as a server: it keeps its own ledger of what customers
paid, serves the APIs a real gateway serves (Midtrans' Core API status and refund, and the
shop's own gateway API), and notifies payment-service's webhooks as each gateway does.

``python -m shop.simulators.gateway_server --port 8004 --webhook-url http://127.0.0.1:8002``
(each option also read from ``SHOP_GATEWAY_*``). ``make run`` starts it, and the end-to-end
and chaos tests pay through it, so that payment-service's real API clients are what ask.

Three faces:

- **Midtrans' Core API**: ``GET /v2/{order_id}/status``, ``POST /v2/{order_id}/refund``
  (``{refund_key, amount, reason}``, idempotent by ``refund_key``), ``/cancel``,
  ``/expire``, ``/approve`` and ``/deny``, basic auth with the server key as the user name.
  Every answer carries Midtrans' ``status_code`` (a string) in its body: ``"404"`` for an
  unknown order, ``"401"`` for a wrong key, ``"407"`` for an expired transaction, ``"412"``
  for a change the transaction cannot take. As Midtrans, it refunds only a settled charge
  of a method its refund API takes (a card capture is cancelled instead; a bank transfer is
  refunded by hand), and holds a ``challenge`` capture until it is approved or denied.
  Refunds are listed in ``refunds`` with their ``refund_chargeback_id``; chargebacks in
  ``chargebacks``, the same shape (where Midtrans lists chargebacks is not documented).
- **The shop's gateway API** (payment-service's README, "The shop's gateway API"): ``GET
  /v1/charges/{order_id}``, ``POST /v1/charges/{order_id}/refunds`` and ``POST
  /v1/charges/{order_id}/expire``, ``Authorization: Bearer <api key>``.
- **Its control API** (``/_simulator/…``), what a customer or a bank does: pay an order, be
  refused, charge back, have a capture cancelled; each posts the notifications the gateway
  would (or drops them, for reconciliation to find), and answers what the webhook said.
"""

from __future__ import annotations

import asyncio
import hmac
import time
import uuid
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Annotated, Any, Final, Literal

import httpx
import typer
import uvicorn
from fastapi import FastAPI, Header, HTTPException, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field

from shop.simulators import gateway
from shop.simulators.gateway import Format, Notice

CONTROL: Final = "/_simulator"
RESEND_DELAYS: Final = (0.5, 1.0, 2.0, 4.0, 8.0)
"""When an unanswered notification is sent again: a real gateway keeps trying for longer."""
_TIME_FORMAT: Final = "%Y-%m-%d %H:%M:%S"
_CARD_STATUSES: Final = {"capture": "credit_card", "authorize": "credit_card"}
_MIDTRANS_REFUNDABLE: Final = frozenset(
    {"credit_card", "gopay", "shopeepay", "dana", "ovo", "qris", "kredivo", "akulaku"}
)
"""The payment types Midtrans' refund API takes; a bank transfer is refunded by hand."""
_MIDTRANS_CANNOT_MODIFY: Final = "Merchant cannot modify the status of the transaction"
_MIDTRANS_MONEY_TAKEN: Final = frozenset(
    {"settlement", "capture", "refund", "partial_refund", "chargeback", "partial_chargeback"}
)


@dataclass
class Reversal:
    id: int
    kind: Literal["refund", "chargeback"]
    amount: int
    created_at: datetime
    key: str | None = None
    reason: str = ""


@dataclass
class Charge:
    """One order's charge at the gateway."""

    order_id: str
    fmt: Format
    transaction_id: str
    status: str
    """Midtrans' word for a Midtrans charge (``settlement``…), the shop API's otherwise
    (``pending``, ``paid``, ``failed``, ``voided``)."""
    amount: int
    currency: str
    created_at: datetime
    settled_at: datetime | None = None
    captured: bool = False
    method: str = "gopay"
    """Midtrans' ``payment_type``: what its refund API accepts depends on it."""
    fraud: str = "accept"
    """Midtrans' ``fraud_status``: a ``challenge`` capture waits for approve or deny."""
    reversals: list[Reversal] = field(default_factory=list)
    last_notice: Notice | None = None
    sent: list[Notice] = field(default_factory=list)
    """The notifications of its latest change as they were sent (repeats included), for
    the gateway to send again word for word."""

    @property
    def reversed_amount(self) -> int:
        return sum(reversal.amount for reversal in self.reversals)

    @property
    def money_taken(self) -> bool:
        if self.fmt == Format.MIDTRANS:
            return self.status in _MIDTRANS_MONEY_TAKEN and self.fraud != "challenge"
        return self.status == "paid"


@dataclass
class Gateway:
    """The ledger and the keys; one per server."""

    keys: gateway.SigningKeys
    api_key: str
    webhook_url: str
    charges: dict[str, Charge] = field(default_factory=dict)
    next_reversal: int = 1
    sending: set[asyncio.Task[Any]] = field(default_factory=set)
    """Notifications on their way (kept, so that none is collected half sent)."""
    _webhook: httpx.AsyncClient | None = None

    def reversal_id(self) -> int:
        self.next_reversal += 1
        return self.next_reversal - 1

    def webhook(self) -> httpx.AsyncClient:
        """The client every notification is posted with. Made once: making an httpx client
        costs tens of milliseconds of CPU (its TLS context), more than the gateway spent on
        the rest of a payment (make bench-e2e). No connection is kept between requests, so
        each notification still comes on a connection of its own, as a gateway's does."""
        if self._webhook is None:
            self._webhook = httpx.AsyncClient(
                base_url=self.webhook_url,
                timeout=10,
                limits=httpx.Limits(max_keepalive_connections=0),
            )
        return self._webhook

    async def close(self) -> None:
        """Drop the notifications still held back, then the client they would go with."""
        for task in self.sending:
            task.cancel()
        await asyncio.gather(*self.sending, return_exceptions=True)
        if self._webhook is not None:
            await self._webhook.aclose()
            self._webhook = None


class PayRequest(BaseModel):
    order_id: uuid.UUID
    amount: int = Field(ge=0)
    currency: str = "IDR"
    format: Format = Format.SHOP
    outcome: str = "settlement"
    """Midtrans' status to end in (``settlement``, ``pending``, ``deny``, ``capture``…); in
    the shop's format ``settlement`` pays and anything else fails."""
    method: str | None = None
    """Midtrans' ``payment_type``; None: ``credit_card`` for a card's statuses (capture,
    authorize), else ``gopay``."""
    fraud: Literal["accept", "challenge"] = "accept"
    """A Midtrans card capture held for a fraud review (``challenge``) until approved or
    denied through the API."""
    notify: bool = True
    """False: the notification is lost on the way (reconciliation finds the charge)."""
    notify_after: float = Field(default=0, ge=0, le=3600)
    """Seconds the notification is held back (answered at once, sent later)."""
    times: int = Field(default=1, ge=1, le=20)
    out_of_order: bool = False
    concurrently: bool = False
    resend: bool = True
    """False: each notification is posted once and its answer told as it came."""


class ReverseRequest(BaseModel):
    amount: int | None = Field(default=None, gt=0)
    """None: all that is left."""
    notify: bool = True


class ResendRequest(BaseModel):
    every: bool = False
    """Every notification of the charge's latest change, not only the last one."""
    concurrently: bool = False
    resend: bool = True
    """False: each notification is posted once and its answer told as it came (a caller
    that counts cut requests resends itself)."""


class RefundBody(BaseModel):
    refund_key: str | None = Field(default=None, max_length=200)
    amount: int | None = Field(default=None, gt=0)
    reason: str = ""


def create_app(state: Gateway) -> FastAPI:
    @asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        yield
        await state.close()

    app = FastAPI(title="Development payment gateway", docs_url="/docs", lifespan=lifespan)
    app.state.gateway = state
    _midtrans_api(app, state)
    _shop_api(app, state)

    @app.exception_handler(MidtransUnauthorized)
    async def midtrans_unauthorized(_request: Request, _error: Exception) -> JSONResponse:
        return _midtrans_error(
            401,
            "Access denied due to unauthorized transaction, please check client or server key",
        )

    _control_api(app, state)

    @app.get("/healthz")
    async def healthz() -> dict[str, str]:
        return {"status": "ok"}

    return app


def _midtrans_api(app: FastAPI, state: Gateway) -> None:

    @app.get("/v2/{order_id}/status")
    async def midtrans_status(
        order_id: str, authorization: Annotated[str | None, Header()] = None
    ) -> JSONResponse:
        _midtrans_auth(state, authorization)
        charge = state.charges.get(order_id)
        if charge is None or charge.fmt != Format.MIDTRANS:
            return _midtrans_error(404, "Transaction doesn't exist.")
        return JSONResponse(_midtrans_document(charge))

    @app.post("/v2/{order_id}/refund")
    async def midtrans_refund(
        order_id: str, body: RefundBody, authorization: Annotated[str | None, Header()] = None
    ) -> JSONResponse:
        _midtrans_auth(state, authorization)
        charge = state.charges.get(order_id)
        if charge is None or charge.fmt != Format.MIDTRANS:
            return _midtrans_error(404, "Transaction doesn't exist.")
        known = _refund_by_key(charge, body.refund_key)
        if known is None:
            if charge.status in _CARD_STATUSES or charge.method not in _MIDTRANS_REFUNDABLE:
                # As Midtrans: a capture not settled is cancelled instead; a bank transfer
                # is refunded by hand.
                return _midtrans_error(412, _MIDTRANS_CANNOT_MODIFY)
            problem = _refusal(charge, body.amount)
            if problem:
                return _midtrans_error(412, problem)
            known = _refund(state, charge, body)
            _notify_later(state, charge)
        return JSONResponse(
            {
                **_midtrans_document(charge),
                "status_message": "Success, refund request is approved",
                "refund_chargeback_id": known.id,
                "refund_amount": f"{known.amount}.00",
                "refund_key": known.key,
            }
        )

    @app.post("/v2/{order_id}/cancel")
    async def midtrans_cancel(
        order_id: str, authorization: Annotated[str | None, Header()] = None
    ) -> JSONResponse:
        _midtrans_auth(state, authorization)
        return _midtrans_change(
            state.charges.get(order_id),
            _Change("cancel", "200", "Success, transaction is canceled"),
            lambda charge: charge.status in {"capture", "authorize", "pending"},
            state,
        )

    @app.post("/v2/{order_id}/expire")
    async def midtrans_expire(
        order_id: str, authorization: Annotated[str | None, Header()] = None
    ) -> JSONResponse:
        _midtrans_auth(state, authorization)
        return _midtrans_change(
            state.charges.get(order_id),
            _Change("expire", "407", "Success, transaction has expired"),
            lambda charge: charge.status == "pending",
            state,
        )

    @app.post("/v2/{order_id}/approve")
    async def midtrans_approve(
        order_id: str, authorization: Annotated[str | None, Header()] = None
    ) -> JSONResponse:
        _midtrans_auth(state, authorization)
        return _midtrans_change(
            state.charges.get(order_id),
            _Change("capture", "200", "Success, transaction is approved", fraud="accept"),
            _challenged,
            state,
        )

    @app.post("/v2/{order_id}/deny")
    async def midtrans_deny(
        order_id: str, authorization: Annotated[str | None, Header()] = None
    ) -> JSONResponse:
        _midtrans_auth(state, authorization)
        return _midtrans_change(
            state.charges.get(order_id),
            _Change("deny", "200", "Success, transaction is denied", fraud="deny"),
            _challenged,
            state,
        )


@dataclass(frozen=True)
class _Change:
    """What one of Midtrans' calls that change a transaction makes of it, and answers."""

    status: str
    code: str
    message: str
    fraud: str | None = None


def _challenged(charge: Charge) -> bool:
    return charge.status == "capture" and charge.fraud == "challenge"


def _midtrans_change(
    charge: Charge | None,
    change: _Change,
    applies: Callable[[Charge], bool],
    state: Gateway,
) -> JSONResponse:
    """Cancel, expire, approve or deny, as Midtrans does them: 412 unless the transaction
    is in a status the call applies to; else the change is made, answered, and notified
    after the answer."""
    if charge is None or charge.fmt != Format.MIDTRANS:
        return _midtrans_error(404, "Transaction doesn't exist.")
    if not applies(charge):
        return _midtrans_error(412, _MIDTRANS_CANNOT_MODIFY)
    charge.status = change.status
    if change.fraud is not None:
        charge.fraud = change.fraud
    if charge.money_taken and charge.settled_at is None:
        charge.settled_at = datetime.now(UTC)
    _notify_later(state, charge)
    return JSONResponse(
        {**_midtrans_document(charge), "status_code": change.code, "status_message": change.message}
    )


def _shop_api(app: FastAPI, state: Gateway) -> None:

    @app.get("/v1/charges/{order_id}")
    async def shop_charge(
        order_id: str, authorization: Annotated[str | None, Header()] = None
    ) -> JSONResponse:
        _bearer(state, authorization)
        charge = state.charges.get(order_id)
        if charge is None or charge.fmt != Format.SHOP:
            return JSONResponse({"detail": f"no charge for order {order_id}"}, status_code=404)
        return JSONResponse(_shop_document(charge))

    @app.post("/v1/charges/{order_id}/refunds")
    async def shop_refund(
        order_id: str, body: RefundBody, authorization: Annotated[str | None, Header()] = None
    ) -> JSONResponse:
        _bearer(state, authorization)
        charge = state.charges.get(order_id)
        if charge is None or charge.fmt != Format.SHOP:
            return JSONResponse({"detail": f"no charge for order {order_id}"}, status_code=404)
        known = _refund_by_key(charge, body.refund_key)
        if known is None:
            problem = _refusal(charge, body.amount)
            if problem:
                return JSONResponse({"detail": problem}, status_code=409)
            known = _refund(state, charge, body)
            _notify_later(state, charge)
        return JSONResponse(_shop_reversal(known))

    @app.post("/v1/charges/{order_id}/expire")
    async def shop_expire(
        order_id: str, authorization: Annotated[str | None, Header()] = None
    ) -> JSONResponse:
        _bearer(state, authorization)
        charge = state.charges.get(order_id)
        if charge is None or charge.fmt != Format.SHOP:
            return JSONResponse({"detail": f"no charge for order {order_id}"}, status_code=404)
        if charge.status != "pending":
            return JSONResponse(
                {"detail": f"the charge is {charge.status}: only a pending one expires"},
                status_code=409,
            )
        charge.status = "failed"
        _notify_later(state, charge)
        return JSONResponse(_shop_document(charge))


def _control_api(app: FastAPI, state: Gateway) -> None:

    @app.post(f"{CONTROL}/charges")
    async def pay(body: PayRequest) -> dict[str, Any]:
        order_id = str(body.order_id)
        charge = _charged(state, body)
        state.charges[order_id] = charge
        payment = gateway.Payment(body.order_id, body.amount, body.currency)
        sequence = _pay_notices(state, charge, payment, body)
        charge.last_notice = sequence[-1] if sequence else None
        charge.sent = sequence
        if not body.notify:
            return {"charge": _shop_or_midtrans(charge), "answers": [], "dropped": len(sequence)}
        if body.notify_after:
            task = asyncio.get_running_loop().create_task(
                _send_after(state, sequence, body.notify_after)
            )
            state.sending.add(task)
            task.add_done_callback(state.sending.discard)
            return {"charge": _shop_or_midtrans(charge), "answers": [], "held": len(sequence)}
        answers = await _send(state, sequence, concurrently=body.concurrently, resend=body.resend)
        return {"charge": _shop_or_midtrans(charge), "answers": answers}

    @app.post(f"{CONTROL}/charges/{{order_id}}/chargeback")
    async def chargeback(order_id: str, body: ReverseRequest) -> dict[str, Any]:
        charge = _taken(state, order_id)
        amount = body.amount or charge.amount - charge.reversed_amount
        charge.reversals.append(
            Reversal(state.reversal_id(), "chargeback", amount, datetime.now(UTC))
        )
        if charge.fmt == Format.MIDTRANS:
            full = charge.reversed_amount >= charge.amount
            charge.status = "chargeback" if full else "partial_chargeback"
        return {"answers": await _notify(state, charge) if body.notify else []}

    @app.post(f"{CONTROL}/charges/{{order_id}}/refund")
    async def refund_at_the_gateway(order_id: str, body: ReverseRequest) -> dict[str, Any]:
        charge = _taken(state, order_id)
        problem = _refusal(charge, body.amount)
        if problem:
            raise HTTPException(409, problem)
        _refund(state, charge, RefundBody(amount=body.amount, reason="refunded at the gateway"))
        return {"answers": await _notify(state, charge) if body.notify else []}

    @app.post(f"{CONTROL}/charges/{{order_id}}/cancel")
    async def cancel_capture(order_id: str, body: ReverseRequest) -> dict[str, Any]:
        charge = _taken(state, order_id)
        if charge.fmt == Format.MIDTRANS:
            charge.status = "cancel"
        else:
            charge.status = "voided"
        return {"answers": await _notify(state, charge) if body.notify else []}

    @app.post(f"{CONTROL}/charges/{{order_id}}/notify")
    async def notify_again(order_id: str, body: ResendRequest | None = None) -> dict[str, Any]:
        """The gateway sends again, word for word, the last notification of the charge (or
        ``every`` one of its latest change), as it does when an answer was slow or lost."""
        charge = state.charges.get(order_id)
        if charge is None:
            raise HTTPException(404, f"no charge for order {order_id}")
        how = body or ResendRequest()
        if charge.last_notice is None:
            return {"answers": await _notify(state, charge)}
        sequence = charge.sent if how.every else [charge.last_notice]
        answers = await _send(state, sequence, concurrently=how.concurrently, resend=how.resend)
        return {"answers": answers}

    @app.delete(f"{CONTROL}/charges")
    async def forget_everything() -> dict[str, int]:
        """A clean ledger (for tests that share one gateway)."""
        forgotten = len(state.charges)
        state.charges.clear()
        return {"forgotten": forgotten}

    @app.get(f"{CONTROL}/charges/{{order_id}}")
    async def ledger_entry(order_id: str) -> dict[str, Any]:
        charge = state.charges.get(order_id)
        if charge is None:
            raise HTTPException(404, f"no charge for order {order_id}")
        return _shop_or_midtrans(charge)


# -- the ledger -------------------------------------------------------------------------------


def _charged(state: Gateway, body: PayRequest) -> Charge:
    now = datetime.now(UTC)
    order_id = str(body.order_id)
    if body.format == Format.MIDTRANS:
        charge = Charge(
            order_id,
            Format.MIDTRANS,
            str(uuid.uuid4()),
            body.outcome,
            body.amount,
            body.currency,
            now,
            captured=body.outcome == "capture",
            method=body.method or _CARD_STATUSES.get(body.outcome, "gopay"),
            fraud=body.fraud,
        )
    else:
        status = {"settlement": "paid", "pending": "pending"}.get(body.outcome, "failed")
        charge = Charge(
            order_id,
            Format.SHOP,
            f"ch_{uuid.uuid4().hex[:16]}",
            status,
            body.amount,
            body.currency,
            now,
        )
    if charge.money_taken:
        charge.settled_at = now
    return charge


def _taken(state: Gateway, order_id: str) -> Charge:
    charge = state.charges.get(order_id)
    if charge is None or not charge.money_taken:
        raise HTTPException(409, f"order {order_id} has no charge that took money")
    return charge


def _refund_by_key(charge: Charge, key: str | None) -> Reversal | None:
    if key is None:
        return None
    return next((r for r in charge.reversals if r.kind == "refund" and r.key == key), None)


def _refusal(charge: Charge, amount: int | None) -> str | None:
    if not charge.money_taken:
        return f"transaction is {charge.status}: only a settled one can be refunded"
    left = charge.amount - charge.reversed_amount
    if (amount or left) > left or left == 0:
        return f"refund amount exceeds what is left ({left})"
    return None


def _refund(state: Gateway, charge: Charge, body: RefundBody) -> Reversal:
    left = charge.amount - charge.reversed_amount
    refund = Reversal(
        state.reversal_id(),
        "refund",
        body.amount or left,
        datetime.now(UTC),
        key=body.refund_key or f"gw-{uuid.uuid4().hex[:12]}",
        reason=body.reason,
    )
    charge.reversals.append(refund)
    if charge.fmt == Format.MIDTRANS:
        charge.status = "refund" if charge.reversed_amount >= charge.amount else "partial_refund"
    return refund


# -- the documents ----------------------------------------------------------------------------


def _midtrans_document(charge: Charge) -> dict[str, Any]:
    # The status call answers an expired transaction with 407, where its notification said 202.
    code = (
        "407"
        if charge.status == "expire"
        else gateway.midtrans_status_code(charge.status, charge.fraud)
    )
    document: dict[str, Any] = {
        "status_code": code,
        "status_message": "Success, transaction is found",
        "transaction_id": charge.transaction_id,
        "order_id": charge.order_id,
        "gross_amount": f"{charge.amount}.00",
        "currency": charge.currency,
        "payment_type": charge.method,
        "transaction_time": _jakarta(charge.created_at),
        "transaction_status": charge.status,
        "fraud_status": charge.fraud,
    }
    if charge.captured:
        document["approval_code"] = charge.transaction_id[:13]
    if charge.settled_at is not None:
        document["settlement_time"] = _jakarta(charge.settled_at)
    refunds = [r for r in charge.reversals if r.kind == "refund"]
    chargebacks = [r for r in charge.reversals if r.kind == "chargeback"]
    if refunds:
        document["refund_amount"] = f"{sum(r.amount for r in refunds)}.00"
        document["refunds"] = [_midtrans_reversal(r) for r in refunds]
    if chargebacks:
        document["chargebacks"] = [_midtrans_reversal(r) for r in chargebacks]
    return document


def _midtrans_reversal(reversal: Reversal) -> dict[str, Any]:
    return {
        "refund_chargeback_id": reversal.id,
        "refund_amount": f"{reversal.amount}.00",
        "created_at": _jakarta(reversal.created_at),
        "reason": reversal.reason,
        "refund_key": reversal.key,
    }


def _shop_document(charge: Charge) -> dict[str, Any]:
    return {
        "order_id": charge.order_id,
        "charge_id": charge.transaction_id,
        "status": charge.status,
        "amount": charge.amount,
        "currency": charge.currency,
        "settled_at": charge.settled_at.isoformat() if charge.settled_at else None,
        "reversals": [_shop_reversal(r) for r in charge.reversals],
    }


def _shop_reversal(reversal: Reversal) -> dict[str, Any]:
    return {
        "id": f"re_{reversal.id}",
        "kind": reversal.kind,
        "amount": reversal.amount,
        "created_at": reversal.created_at.isoformat(),
    }


def _shop_or_midtrans(charge: Charge) -> dict[str, Any]:
    return _midtrans_document(charge) if charge.fmt == Format.MIDTRANS else _shop_document(charge)


def _jakarta(moment: datetime) -> str:
    return moment.astimezone(gateway.JAKARTA).strftime(_TIME_FORMAT)


# -- authentication ---------------------------------------------------------------------------


class MidtransUnauthorized(Exception):
    """A call to Midtrans' API without the server key: answered in Midtrans' own shape."""


def _midtrans_auth(state: Gateway, authorization: str | None) -> None:
    expected = httpx.BasicAuth(state.keys.midtrans_server_key, "")._auth_header
    if not authorization or not hmac.compare_digest(authorization, expected):
        raise MidtransUnauthorized


def _bearer(state: Gateway, authorization: str | None) -> None:
    if not authorization or not hmac.compare_digest(authorization, f"Bearer {state.api_key}"):
        raise HTTPException(401, detail="a valid Authorization: Bearer <api key> is required")


def _midtrans_error(code: int, message: str) -> JSONResponse:
    return JSONResponse({"status_code": str(code), "status_message": message}, status_code=code)


# -- notifications ----------------------------------------------------------------------------


def _pay_notices(
    state: Gateway, charge: Charge, payment: gateway.Payment, body: PayRequest
) -> list[Notice]:
    if charge.fmt == Format.MIDTRANS:
        sequence = [
            gateway.midtrans_notice(
                payment,
                state.keys.midtrans_server_key,
                status=status,
                amount=body.amount,
                transaction_id=charge.transaction_id,
                payment_type=charge.method,
                fraud_status=charge.fraud if status == body.outcome else "accept",
            )
            for status in ("pending", body.outcome)
            if not (status == "pending" and body.outcome == "pending")
        ]
        if body.out_of_order:
            sequence.reverse()
    else:
        now = int(time.time())
        kind = "payment.paid" if charge.status == "paid" else "payment.failed"
        sequence = [
            gateway.shop_notice(
                payment,
                state.keys.webhook_secret,
                kind=kind,
                amount=body.amount,
                event_id=f"evt_{uuid.uuid4().hex[:12]}",
                at=now,
                payment_id=charge.transaction_id,
            )
        ]
        if body.out_of_order:
            sequence.append(
                gateway.shop_notice(
                    payment,
                    state.keys.webhook_secret,
                    kind="payment.failed",
                    amount=body.amount,
                    event_id=f"evt_{uuid.uuid4().hex[:12]}_earlier",
                    at=now - 60,
                    payment_id=f"ch_earlier_{uuid.uuid4().hex[:8]}",
                )
            )
    return [notice for notice in sequence for _ in range(body.times)]


def _current_notice(state: Gateway, charge: Charge) -> Notice:
    """The notification of the charge's latest change, as its gateway sends it."""
    payment = gateway.Payment(uuid.UUID(charge.order_id), charge.amount, charge.currency)
    if charge.fmt == Format.MIDTRANS:
        return gateway.midtrans_notice(
            payment,
            state.keys.midtrans_server_key,
            status=charge.status,
            amount=charge.amount,
            transaction_id=charge.transaction_id,
            reversed_amount=charge.reversed_amount,
            payment_type=charge.method,
            fraud_status=charge.fraud,
        )
    last = charge.reversals[-1] if charge.reversals else None
    kind = {
        "paid": "payment.paid",
        "failed": "payment.failed",
        "voided": "payment.refunded",
    }.get(charge.status, "payment.paid")
    if last is not None and charge.status == "paid":
        kind = "payment.refunded" if last.kind == "refund" else "payment.charged_back"
    return gateway.shop_notice(
        payment,
        state.keys.webhook_secret,
        kind=kind,
        amount=last.amount if last and kind != "payment.paid" else charge.amount,
        event_id=f"evt_{uuid.uuid4().hex[:12]}",
        at=int(time.time()),
        payment_id=charge.transaction_id,
    )


def _notify_later(state: Gateway, charge: Charge) -> None:
    """After an API call has been answered, as a gateway notifies: never inside the call."""
    task = asyncio.get_running_loop().create_task(_notify(state, charge))
    state.sending.add(task)
    task.add_done_callback(state.sending.discard)


async def _notify(state: Gateway, charge: Charge) -> list[dict[str, Any]]:
    notice = _current_notice(state, charge)
    charge.last_notice = notice
    charge.sent = [notice]
    return await _send(state, [notice], concurrently=False)


async def _send(
    state: Gateway, sequence: list[Notice], *, concurrently: bool, resend: bool = True
) -> list[dict[str, Any]]:
    delays = RESEND_DELAYS if resend else ()
    client = state.webhook()
    if concurrently:
        answers = list(await asyncio.gather(*(_deliver(client, n, delays) for n in sequence)))
    else:
        answers = [await _deliver(client, notice, delays) for notice in sequence]
    return [{"notification": a.notification, "status": a.status, "body": a.body} for a in answers]


async def _send_after(state: Gateway, sequence: list[Notice], delay: float) -> None:
    await asyncio.sleep(delay)
    await _send(state, sequence, concurrently=False)


async def _deliver(
    client: httpx.AsyncClient, notice: Notice, delays: tuple[float, ...]
) -> gateway.Answer:
    """As a gateway does: a notification that is not answered, or answered 5xx, is sent
    again a few times with backoff (the webhook's 4xx is final); the last answer."""
    answer = await gateway.post(client, notice)
    for delay in delays:
        if gateway.UNDELIVERED < answer.status < 500:
            break
        await asyncio.sleep(delay)
        answer = await gateway.post(client, notice)
    return answer


# -- the command ------------------------------------------------------------------------------

command = typer.Typer(add_completion=False, help=__doc__)


@command.command()
def serve(
    *,
    port: Annotated[int, typer.Option(envvar="SHOP_GATEWAY_PORT")] = 8004,
    host: Annotated[str, typer.Option(envvar="SHOP_GATEWAY_HOST")] = "127.0.0.1",
    webhook_url: Annotated[
        str, typer.Option(envvar="SHOP_GATEWAY_WEBHOOK_URL", help="payment-service's API")
    ] = "http://127.0.0.1:8002",
    webhook_secret: Annotated[
        str, typer.Option(envvar="SHOP_GATEWAY_WEBHOOK_SECRET")
    ] = "whsec_development-only-do-not-deploy",
    midtrans_server_key: Annotated[
        str, typer.Option(envvar="SHOP_GATEWAY_MIDTRANS_SERVER_KEY")
    ] = "SB-Mid-server-development-only",
    api_key: Annotated[
        str, typer.Option(envvar="SHOP_GATEWAY_API_KEY")
    ] = "gwkey_development-only-do-not-deploy",
) -> None:
    """Serve the development payment gateway until stopped (SIGTERM or Ctrl-C)."""
    state = Gateway(gateway.SigningKeys(webhook_secret, midtrans_server_key), api_key, webhook_url)
    uvicorn.run(create_app(state), host=host, port=port, log_level="warning")


if __name__ == "__main__":
    command()
