"""What a reconciliation reports: each way the shop's payments can drift from the gateway's
records, whether it is repaired where found or flagged for a person, as data."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum

from shop.payment.domain.gateway import ChargeState, GatewayPayment
from shop.payment.domain.payments import Fail, Mismatch, Pay, Payment, Reverse, Step, TakeLate
from shop.payment.domain.status import PaymentStatus


class DriftKind(StrEnum):
    SETTLEMENT_MISSED = "settlement_missed"
    """Paid at the gateway, unpaid in the shop: repaired (paid)."""
    LATE_SETTLEMENT_MISSED = "late_settlement_missed"
    """Paid at the gateway after the payment expired: repaired (refunded)."""
    FAILURE_MISSED = "failure_missed"
    """Refused at the gateway, pending in the shop: repaired (failed)."""
    REVERSAL_MISSED = "reversal_missed"
    """Refunded, charged back or voided at the gateway, not in the shop: repaired."""
    REFUND_OUTSTANDING = "refund_outstanding"
    """A refund due that the gateway does not list yet: asked for again (idempotent)."""
    REFUND_REFUSED = "refund_refused"
    """A refund due that the gateway refused (flagged): a person gives the money back."""
    AMOUNT_MISMATCH = "amount_mismatch"
    """The gateway took another amount than the order's: flagged."""
    PAID_NOT_AT_GATEWAY = "paid_not_at_gateway"
    """Paid in the shop, but the gateway holds no such taken charge: flagged."""
    GATEWAY_UNREACHABLE = "gateway_unreachable"
    """The gateway could not be asked about this payment: looked at again next time."""


REPAIRED = frozenset(
    {
        DriftKind.SETTLEMENT_MISSED,
        DriftKind.LATE_SETTLEMENT_MISSED,
        DriftKind.FAILURE_MISSED,
        DriftKind.REVERSAL_MISSED,
        DriftKind.REFUND_OUTSTANDING,
    }
)


@dataclass(frozen=True, slots=True)
class Finding:
    kind: DriftKind
    order_id: uuid.UUID
    shop_status: str
    gateway_status: str | None
    detail: str

    @property
    def repaired(self) -> bool:
        return self.kind in REPAIRED


@dataclass(frozen=True, slots=True)
class Report:
    since: datetime
    started_at: datetime
    finished_at: datetime
    checked: int
    findings: tuple[Finding, ...]

    def counts(self) -> dict[str, int]:
        """Findings by kind, every kind named (a zero says "looked, found none")."""
        counts = dict.fromkeys((kind.value for kind in DriftKind), 0)
        for finding in self.findings:
            counts[finding.kind.value] += 1
        return counts


_STEP_KINDS: dict[type, DriftKind] = {
    Pay: DriftKind.SETTLEMENT_MISSED,
    TakeLate: DriftKind.LATE_SETTLEMENT_MISSED,
    Fail: DriftKind.FAILURE_MISSED,
    Reverse: DriftKind.REVERSAL_MISSED,
    Mismatch: DriftKind.AMOUNT_MISMATCH,
}

_TAKEN_AT_GATEWAY = (ChargeState.PAID, ChargeState.VOIDED)
_PAID_IN_SHOP = (PaymentStatus.PAID, PaymentStatus.PARTIALLY_REFUNDED)


def findings(payment: Payment, charge: GatewayPayment | None, steps: list[Step]) -> list[Finding]:
    """What drift ``steps`` (the rules' way to bring ``payment`` to ``charge``) reveal, and
    what no step can repair."""
    gateway_status = charge.status if charge else None

    def found(kind: DriftKind, detail: str) -> Finding:
        return Finding(kind, payment.order_id, payment.status.value, gateway_status, detail)

    result = [found(_STEP_KINDS[type(step)], _detail(step)) for step in steps]
    if (
        not steps
        and payment.status in _PAID_IN_SHOP
        and (charge is None or charge.state not in _TAKEN_AT_GATEWAY)
    ):
        result.append(found(DriftKind.PAID_NOT_AT_GATEWAY, "the gateway holds no taken charge"))
    if not steps and payment.status == PaymentStatus.REFUND_DUE:
        if payment.refund_refused:
            result.append(found(DriftKind.REFUND_REFUSED, payment.flagged or ""))
        else:
            result.append(found(DriftKind.REFUND_OUTSTANDING, "refund asked for again"))
    return result


def _detail(step: Step) -> str:
    match step:
        case Pay(charge) | TakeLate(charge) | Fail(charge):
            return f"{charge.status} {charge.transaction_id}"
        case Reverse(reversal, status, _):
            return f"{reversal.kind} {reversal.reference} of {reversal.amount}: {status}"
        case Mismatch(reason):
            return reason
    return ""
