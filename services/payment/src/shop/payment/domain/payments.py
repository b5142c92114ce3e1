"""What the gateway's answer does to an order's payment: the rules, as data in and steps out.

A notification never moves money here. The worker asks the gateway's status API and
:func:`steps_to_match` says how the shop's payment catches up with what the gateway
records; :func:`disagreement` says whether the notification claimed something the gateway
does not bear out (a forged or edited body, a gateway that lost a charge)."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field, replace

from shop.payment.domain.errors import RefundByHandRefused
from shop.payment.domain.gateway import ChargeState, GatewayPayment, GatewayReversal, ReversalKind
from shop.payment.domain.notifications import Meaning, Notification, Provider
from shop.payment.domain.status import MONEY_TAKEN, UNPAID, PaymentStatus


@dataclass(frozen=True, slots=True)
class Payment:
    id: uuid.UUID
    order_id: uuid.UUID
    amount: int
    currency: str
    status: PaymentStatus
    provider: Provider | None = None
    """The gateway that took the money, once one did."""
    provider_payment_id: str | None = None
    """That gateway's id of the charge."""
    reversed_amount: int = 0
    reversals: frozenset[str] = field(default_factory=frozenset)
    """References of the reversals recorded already (each is applied once)."""
    flagged: str | None = None
    """Why a person must look at it, if one must."""

    @property
    def refund_refused(self) -> bool:
        """Its refund was refused by the gateway: a person gives the money back."""
        return (self.flagged or "").startswith(REFUND_REFUSED)


REFUND_REFUSED = "refund refused by the gateway"
"""How a payment whose refund the gateway refused is flagged."""


@dataclass(frozen=True, slots=True)
class Pay:
    """The gateway took the order's amount: the payment is paid (PaymentReceived)."""

    charge: GatewayPayment


@dataclass(frozen=True, slots=True)
class Fail:
    """The gateway refused this try (PaymentFailed); the window still runs."""

    charge: GatewayPayment


@dataclass(frozen=True, slots=True)
class TakeLate:
    """The gateway took money for a payment that had expired (or whose order was cancelled):
    recorded as taken, and refunded in full."""

    charge: GatewayPayment


@dataclass(frozen=True, slots=True)
class Reverse:
    """Money went back at the gateway (PaymentReversed): one step per reversal."""

    reversal: GatewayReversal
    status: PaymentStatus
    """The payment's status once this reversal is recorded."""
    reversed_total: int


@dataclass(frozen=True, slots=True)
class Mismatch:
    """The gateway took another amount or currency than the order's: nothing is paid, a
    person settles it."""

    reason: str


Step = Pay | Fail | TakeLate | Reverse | Mismatch


def steps_to_match(payment: Payment, charge: GatewayPayment | None) -> list[Step]:
    """The steps, in order, that bring ``payment`` to what the gateway records in ``charge``
    (None: the gateway has no charge for the order). Empty when they agree already. Safe
    to repeat and safe with a stale ``charge``: no step moves a payment backwards, and each
    reversal is applied once by its reference."""
    if charge is None or charge.state == ChargeState.PENDING:
        return []
    if charge.state == ChargeState.FAILED or (
        # Taken and given back before the shop heard of it (or an authorisation cancelled):
        # nothing is kept, so nothing is announced as paid only to be reversed.
        charge.state == ChargeState.VOIDED and payment.status in UNPAID
    ):
        return _failed(payment, charge)
    if _another_charge(payment, charge):
        return [
            Mismatch(
                f"a second charge {charge.transaction_id} at {charge.provider} for an order "
                f"paid by {payment.provider_payment_id}: a person refunds one"
            )
        ]
    if (charge.amount, charge.currency) != (payment.amount, payment.currency):
        if payment.status in MONEY_TAKEN and charge.transaction_id == payment.provider_payment_id:
            return []  # the charge that paid; the mismatch was flagged before, if any
        return [
            Mismatch(
                f"the gateway took {charge.amount} {charge.currency}, "
                f"but the order is {payment.amount} {payment.currency}"
            )
        ]
    steps: list[Step] = []
    status = payment.status
    if status in UNPAID:
        steps.append(Pay(charge))
        status = PaymentStatus.PAID
    elif status == PaymentStatus.EXPIRED:
        steps.append(TakeLate(charge))
        status = PaymentStatus.REFUND_DUE
    steps += _reversals(payment, charge, status)
    return steps


def _another_charge(payment: Payment, charge: GatewayPayment) -> bool:
    """Whether ``charge`` took money beside the one the payment holds already (two payments
    for one order, at one gateway or two): its reversals are not this payment's."""
    if payment.status not in MONEY_TAKEN or payment.provider_payment_id is None:
        return False
    return (charge.provider, charge.transaction_id) != (
        payment.provider,
        payment.provider_payment_id,
    )


def _failed(payment: Payment, charge: GatewayPayment) -> list[Step]:
    if payment.status in UNPAID:
        return [] if payment.status == PaymentStatus.FAILED else [Fail(charge)]
    if payment.status in MONEY_TAKEN and charge.transaction_id == payment.provider_payment_id:
        # The charge that paid is now refused (Midtrans can deny a settled transaction):
        # whatever had not gone back yet has.
        void = GatewayReversal(
            ReversalKind.VOID,
            f"{charge.transaction_id}:{charge.status}",
            payment.amount - payment.reversed_amount,
        )
        return _reversals(payment, _with(charge, void), payment.status)
    return []


def _with(charge: GatewayPayment, reversal: GatewayReversal) -> GatewayPayment:
    return replace(charge, reversals=(*charge.reversals, reversal))


def _reversals(payment: Payment, charge: GatewayPayment, status: PaymentStatus) -> list[Step]:
    listed = list(charge.reversals)
    if charge.state == ChargeState.VOIDED and not any(r.kind == ReversalKind.VOID for r in listed):
        left = charge.amount - sum(r.amount for r in listed)
        listed.append(GatewayReversal(ReversalKind.VOID, f"{charge.transaction_id}:void", left))
    steps: list[Step] = []
    total = payment.reversed_amount
    for reversal in listed:
        if reversal.reference in payment.reversals or reversal.amount <= 0:
            continue
        total += reversal.amount
        status = status_after_reversal(status, reversal.kind, total, charge.amount)
        steps.append(Reverse(reversal, status, total))
    return steps


def status_after_reversal(
    status: PaymentStatus, kind: ReversalKind, reversed_total: int, paid: int
) -> PaymentStatus:
    """A chargeback is a chargeback however much it took, and stays one; everything back is
    refunded; a part back leaves a refund that is due still due, and a paid payment partly
    refunded. A payment refunded or charged back already keeps its state (the reversal is
    recorded all the same)."""
    if status in (PaymentStatus.REFUNDED, PaymentStatus.CHARGED_BACK):
        return status
    if kind == ReversalKind.CHARGEBACK:
        return PaymentStatus.CHARGED_BACK
    if reversed_total >= paid:
        return PaymentStatus.REFUNDED
    if status == PaymentStatus.REFUND_DUE:
        return status
    return PaymentStatus.PARTIALLY_REFUNDED


def refund_left(payment: Payment) -> int:
    """What the shop still owes back on a payment whose money it cannot keep."""
    return max(payment.amount - payment.reversed_amount, 0)


BY_HAND = "by-hand:"
"""The reference prefix of a refund a person made outside the gateway."""


def refund_by_hand(payment: Payment, reference: str, amount: int | None) -> Reverse | None:
    """The step that records a refund a person made outside the gateway (a bank transfer
    back, which Midtrans cannot refund through its API) once the gateway refused it:
    ``amount`` of what is due, all of it when None. None when that reference is recorded
    already."""
    if BY_HAND + reference in payment.reversals:
        return None
    if payment.status != PaymentStatus.REFUND_DUE:
        raise RefundByHandRefused(f"payment {payment.id} is {payment.status}: no refund is due")
    if not payment.refund_refused:
        # Its refund through the gateway may still be on its way: both would give it back.
        raise RefundByHandRefused(
            f"the gateway has not refused the refund of payment {payment.id}: "
            "it is being made through the gateway"
        )
    left = refund_left(payment)
    given = left if amount is None else amount
    if given <= 0:
        raise RefundByHandRefused(f"a refund by hand gives back more than 0, not {given}")
    if given > left:
        raise RefundByHandRefused(
            f"{given} {payment.currency} is more than the {left} still due on {payment.id}"
        )
    total = payment.reversed_amount + given
    status = status_after_reversal(payment.status, ReversalKind.REFUND, total, payment.amount)
    return Reverse(GatewayReversal(ReversalKind.REFUND, BY_HAND + reference, given), status, total)


def disagreement(notification: Notification, charge: GatewayPayment | None) -> str | None:
    """Why ``notification`` claims something the gateway's record does not bear out, or
    None. A notification about an earlier try (another charge) that says it failed is
    history, not a disagreement; one that says money moved must be borne out by the
    gateway's record of the order, charge id and amount included."""
    claim = notification.meaning
    if claim == Meaning.PENDING:
        return None
    said = f"the notification says {notification.type!r}"
    if charge is None:
        return f"{said}, but the gateway has no payment for order {notification.order_id}"
    same_charge = notification.provider_payment_id == charge.transaction_id
    gateway_says = f"the gateway says {charge.status!r} for {charge.transaction_id}"
    chargebacks = [r for r in charge.reversals if r.kind == ReversalKind.CHARGEBACK]
    checks = (
        (claim == Meaning.PAID and charge.state not in _MONEY_TAKEN_AT_GATEWAY, gateway_says),
        (
            claim == Meaning.FAILED and same_charge and charge.state == ChargeState.PAID,
            gateway_says,
        ),
        (
            claim == Meaning.REFUNDED
            and not charge.reversals
            and charge.state != ChargeState.VOIDED,
            f"{gateway_says} with nothing given back",
        ),
        (claim == Meaning.CHARGED_BACK and not chargebacks, f"{gateway_says} with no chargeback"),
        (
            claim != Meaning.FAILED and not same_charge,
            f"{gateway_says}, not for {notification.provider_payment_id}",
        ),
        (
            claim == Meaning.PAID and same_charge and notification.amount != charge.amount,
            f"but the gateway took {charge.amount} {charge.currency}, "
            f"not {notification.amount} {notification.currency}",
        ),
    )
    return next((f"{said}, {why}" for failed, why in checks if failed), None)


_MONEY_TAKEN_AT_GATEWAY = (ChargeState.PAID, ChargeState.VOIDED)
