"""Reconciliation as an operator asks for it: payment-service's worker compares its payments
with the gateways' records and repairs what it safely can (``POST /reconciliation`` on its
port); then the payments are held against the orders and the e-mails sent, which no one
service sees together: an order that does not follow its payment, a paid order without its
receipt. What only a person can settle is reported, never changed here."""

from __future__ import annotations

import asyncio
import time
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Final

import httpx

from shop.ops.errors import OpsError
from shop.ops.internal import NotFoundThere, listed_by_ids, operator_port
from shop.ops.settings import (
    NOTIFICATION_SERVICE,
    ORDER_SERVICE,
    PAYMENT_SERVICE,
    OpsSettings,
)

_RECONCILE_TIMEOUT: Final = httpx.Timeout(600.0, connect=5.0)
_BUSY_PAUSE: Final = 1.0
"""Seconds between asks while another reconciliation runs in payment-service's worker, or
while its database is away (a 503)."""
_BUSY_WAIT: Final = 120.0
"""How long to wait for that other reconciliation (its schedule's, or another operator's),
or for the worker's database, before saying so: one takes seconds."""
SETTLING: Final = timedelta(seconds=60)
"""Payments changed this recently may still have their events on the bus: not drift yet."""

ORDER_STATUS_OF_PAYMENT: Final = {
    "paid": {"paid", "fulfilled"},
    "partially_refunded": {"partially_refunded"},
    "refunded": {"refunded", "cancelled"},
    "charged_back": {"charged_back"},
    "expired": {"cancelled"},
    "refund_due": {"cancelled"},
}
"""Where an order stands once its payment's events are through: a refunded payment's order
is refunded, or cancelled if it was a late payment given back."""

RECEIPT: Final = "payment_receipt"
CROSS_SERVICE_KINDS: Final = ("order_behind_payment", "receipt_missing")


@dataclass(frozen=True, slots=True)
class Drift:
    kind: str
    order_id: str
    detail: str
    repaired: bool


@dataclass(frozen=True, slots=True)
class Reconciliation:
    since: str
    checked: int
    drift: dict[str, int]
    """Findings by kind, every kind named."""
    findings: list[Drift]


async def reconcile(settings: OpsSettings, since: datetime | None = None) -> Reconciliation:
    """Ask payment-service to reconcile with the gateways since ``since`` (its own lookback
    when None), then hold its payments against the orders and e-mails."""
    gateway_side = await _payment_service_reconciles(settings, since)
    cross = await cross_service_drift(settings, datetime.fromisoformat(gateway_side["since"]))
    report = _report(gateway_side, cross)
    for kind in CROSS_SERVICE_KINDS:
        report.drift[kind] = sum(1 for finding in cross if finding.kind == kind)
    return report


async def latest_reconciliation(settings: OpsSettings) -> Reconciliation | None:
    """What payment-service's worker found the last time it reconciled with the gateways
    (None until it has, since it started), without running one."""
    async with operator_port(settings, PAYMENT_SERVICE) as payments:
        try:
            latest = await payments.get("/reconciliation")
        except NotFoundThere:
            return None
    return _report(latest, [])


def _report(gateway_side: dict[str, Any], cross: list[Drift]) -> Reconciliation:
    findings = [
        Drift(f["kind"], f["order_id"], f["detail"], bool(f["repaired"]))
        for f in gateway_side["findings"]
    ]
    drift = dict(gateway_side["drift"])
    return Reconciliation(
        since=gateway_side["since"],
        checked=int(gateway_side["checked"]),
        drift=drift,
        findings=findings + cross,
    )


async def _payment_service_reconciles(
    settings: OpsSettings, since: datetime | None
) -> dict[str, Any]:
    params = {"since": since.isoformat()} if since else {}
    give_up = time.monotonic() + _BUSY_WAIT
    async with operator_port(settings, PAYMENT_SERVICE, patience=_RECONCILE_TIMEOUT) as payments:
        while True:
            reply = await payments.answer("POST", "/reconciliation", params)
            # 409: one reconciliation at a time, and another is running; 503: its database
            # was away or too slow a moment, and it says to ask again shortly. This one waits.
            if reply.status_code not in {409, 503}:
                break
            if time.monotonic() > give_up:
                if reply.status_code == 503:
                    break
                raise OpsError(
                    f"another reconciliation is still running after {_BUSY_WAIT:g} s; "
                    "ask again later"
                )
            await asyncio.sleep(_BUSY_PAUSE)
        if reply.status_code != 200:
            raise payments.refusal(reply)
    return dict(reply.json())


async def cross_service_drift(settings: OpsSettings, since: datetime) -> list[Drift]:
    """Payments opened since ``since`` and settled for a minute, against their orders and
    the receipts sent, each as its service's internal API tells it."""
    settled_before = datetime.now(UTC) - SETTLING
    async with operator_port(settings, PAYMENT_SERVICE) as payments:
        paid = (
            await payments.get(
                "/internal/v1/payments",
                {"created_since": since.isoformat(), "updated_before": settled_before.isoformat()},
            )
        )["payments"]
    ids = [uuid.UUID(payment["order_id"]) for payment in paid]
    async with operator_port(settings, ORDER_SERVICE) as orders:
        order_rows = await listed_by_ids(
            orders, "/internal/v1/orders", name="ids", ids=ids, field="orders"
        )
    async with operator_port(settings, NOTIFICATION_SERVICE) as notifications:
        receipt_rows = await listed_by_ids(
            notifications,
            "/internal/v1/emails",
            name="order_ids",
            ids=ids,
            field="emails",
            params={"kind": RECEIPT},
        )
    order_status = {uuid.UUID(row["id"]): str(row["status"]) for row in order_rows}
    receipts = {uuid.UUID(row["order_id"]) for row in receipt_rows}
    return [
        drift
        for order_id, payment in zip(ids, paid, strict=True)
        for drift in _drift_of(order_id, payment["status"], order_status.get(order_id), receipts)
    ]


def _drift_of(
    order_id: uuid.UUID, payment: str, order: str | None, receipts: set[uuid.UUID]
) -> list[Drift]:
    found = []
    expected = ORDER_STATUS_OF_PAYMENT.get(payment)
    if expected is not None and order not in expected:
        found.append(
            Drift(
                "order_behind_payment",
                str(order_id),
                f"payment {payment}, order {order or 'unknown'}: its events are stuck or lost "
                "(look at the dead letters and the outboxes)",
                repaired=False,
            )
        )
    if payment == "paid" and order in ("paid", "fulfilled") and order_id not in receipts:
        found.append(
            Drift("receipt_missing", str(order_id), "paid, but no receipt was sent", False)
        )
    return found
