"""Reconciliation: every payment opened in a period is compared with what its gateway
records. What the rules can bring in line is repaired where found (a settlement, failure or
reversal the shop never heard of, a refund the gateway does not list yet); what they cannot
is flagged for a person (another amount, a payment the gateway holds no charge for). Run
periodically by the worker and on demand (``shopctl reconcile``)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from shop.payment.domain.errors import GatewayRefused, GatewayUnavailable
from shop.payment.domain.payments import Pay, Payment, steps_to_match
from shop.payment.domain.reconciliation import DriftKind, Finding, Report, findings
from shop.payment.domain.status import PaymentStatus
from shop.payment.ports import PaymentStore
from shop.payment.service_layer.payments import (
    Gateways,
    ask_refund,
    bring_to_gateway,
    charge_at_any,
)

SETTLING = timedelta(seconds=60)


async def reconcile(
    store: PaymentStore,
    gateways: Gateways,
    *,
    since: datetime,
    limit: int,
    log: Any,
    settling: timedelta = SETTLING,
) -> Report:
    """Payments opened since ``since`` (at most ``limit``), each against its gateway's
    record. A payment opened, or a charge settled, within ``settling`` of now may still
    have its notification on the way: not drift yet."""
    started = datetime.now(UTC)
    async with store.transaction() as payments:
        candidates = await payments.opened_between(since, started - settling, limit=limit)
    found: list[Finding] = []
    for payment in candidates:
        found += await _reconcile_one(store, gateways, payment, started - settling)
    report = Report(since, started, datetime.now(UTC), len(candidates), tuple(found))
    log.info(
        "reconciliation done",
        checked=report.checked,
        **{kind: count for kind, count in report.counts().items() if count},
    )
    return report


async def _reconcile_one(
    store: PaymentStore, gateways: Gateways, payment: Payment, settled_before: datetime
) -> list[Finding]:
    try:
        charge = await charge_at_any(gateways, payment)
    except (GatewayUnavailable, GatewayRefused) as error:
        return [
            Finding(
                DriftKind.GATEWAY_UNREACHABLE,
                payment.order_id,
                payment.status.value,
                None,
                f"{type(error).__name__}: {error}",
            )
        ]
    steps = steps_to_match(payment, charge)
    settled = charge.settled_at if charge else None
    if steps and isinstance(steps[0], Pay) and settled and settled > settled_before:
        return []
    drift = findings(payment, charge, steps)
    if steps:
        await bring_to_gateway(store, payment, charge)
    for finding in drift:
        if finding.kind == DriftKind.PAID_NOT_AT_GATEWAY:
            async with store.transaction() as payments:
                await payments.flag(payment, f"reconciliation: {finding.detail}")
        elif finding.kind == DriftKind.REFUND_OUTSTANDING:
            async with store.transaction() as payments:
                current = await payments.get(payment.order_id, lock=True)
                if (
                    current is not None
                    and current.status == PaymentStatus.REFUND_DUE
                    and not current.refund_refused  # refused meanwhile: a person's now
                ):
                    await ask_refund(payments, current, "refund due still outstanding")
    return drift
