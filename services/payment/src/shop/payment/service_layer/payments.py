"""An order's payment over its life. Opened for each OrderCreated, with its expiry scheduled;
moved only by what the gateway's status API answers (a notification says "look now", the
expiry and the reconciliation look too); expired when its window ends unpaid; refunded
through the gateway when its money cannot be kept.

The gateway is asked outside any transaction (a slow gateway holds no lock and no
connection); its answer is then applied under the payment's lock. The rules never move a
payment backwards and apply each reversal once, so an answer that another worker's newer
answer overtook changes nothing."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from typing import Any

from shop.contracts import (
    ExpirePayment,
    OrderCancelled,
    OrderCreated,
    PaymentExpired,
    PaymentFailed,
    PaymentReceived,
    PaymentReversed,
    ProcessPayment,
    RefundPayment,
)
from shop.payment.domain.errors import (
    AmountMismatch,
    ChargeMovedOn,
    GatewayNotConfigured,
    GatewayRefused,
    NotificationDisputed,
    NotificationNotKept,
    RefundByHandRefused,
    RefundNotListed,
)
from shop.payment.domain.gateway import ChargeState, GatewayPayment, RefundRequest, ReversalKind
from shop.payment.domain.notifications import Provider
from shop.payment.domain.payments import (
    REFUND_REFUSED,
    Fail,
    Mismatch,
    Pay,
    Payment,
    Reverse,
    Step,
    TakeLate,
    disagreement,
    refund_by_hand,
    refund_left,
    steps_to_match,
)
from shop.payment.domain.status import UNPAID, PaymentStatus
from shop.payment.ports import PaymentGateway, Payments, PaymentStore, StoredNotification

Gateways = Mapping[Provider, PaymentGateway]
"""The gateways this shop takes payments through, by provider."""

REVIEW_RECHECK = timedelta(minutes=5)
"""How often, at least, a payment past its window whose capture is under the gateway's
fraud review is looked at again (a person approves or denies it: minutes to a day)."""


@dataclass(frozen=True, slots=True)
class PaymentWindow:
    length: timedelta
    """How long after its checkout an order may be paid."""
    grace: timedelta
    """How long after that the payment still waits for notifications in flight."""


async def open_payment(payments: Payments, order: OrderCreated, window: PaymentWindow) -> bool:
    """A pending payment for the order's total, its expiry scheduled, and every notification
    that came before it queued again; a repeat changes nothing."""
    key = str(order.order_id)
    opened = await payments.open(
        order.order_id, order_number=order.order_number, amount=order.total, currency=order.currency
    )
    if opened:
        due = order.placed_at + window.length + window.grace
        await payments.add_event(ExpirePayment(order_id=order.order_id), key=key, due_at=due)
        # Only for a payment opened now: a notification kept once it existed was queued,
        # and processed, as usual.
        await _requeue_early_notifications(payments, order.order_id)
    return opened


async def cancel_payment(payments: Payments, order: OrderCancelled, log: Any) -> None:
    """The order is cancelled: an unpaid payment expires (one not opened yet is opened
    expired: the cancellation outran its OrderCreated) and its charge is closed at the
    gateway at once (ExpirePayment, due now), and money already taken for it is refunded
    through the gateway."""
    existed = await payments.get(order.order_id) is not None
    expired = await payments.expire(
        order.order_id, order_number=order.order_number, amount=order.total, currency=order.currency
    )
    if not existed:
        await _requeue_early_notifications(payments, order.order_id)
    if expired:
        # Its charge, if the customer opened one at the gateway, is closed now rather than
        # at the window's end: a bank transfer paid meanwhile could only be refunded by hand.
        await payments.add_event(ExpirePayment(order_id=order.order_id), key=str(order.order_id))
    else:
        payment = await payments.get(order.order_id, lock=True)
        if payment is not None and payment.status in (
            PaymentStatus.PAID,
            PaymentStatus.PARTIALLY_REFUNDED,
        ):
            await payments.set_status(payment, PaymentStatus.REFUND_DUE)
            await ask_refund(payments, payment, "its order was cancelled after it was paid")
            log.warning(
                "refund due: order cancelled after its payment", order_id=str(order.order_id)
            )


async def _requeue_early_notifications(payments: Payments, order_id: Any) -> None:
    for stored in await payments.unprocessed_notifications(order_id):
        command = ProcessPayment(
            provider_event_id=stored.notification.provider_event_id,
            provider=stored.notification.provider.value,
        )
        await payments.add_event(command, key=str(order_id))


async def process_notification(
    store: PaymentStore, gateways: Gateways, provider: str, provider_event_id: str, log: Any
) -> str:
    """Ask the notification's gateway about its order and bring the payment to the answer;
    return the outcome recorded. A notification whose payment is not opened yet waits,
    kept, for :func:`open_payment` to queue it again (nothing to retry, nothing to run out).

    :class:`NotificationNotKept` for an id no webhook kept; :class:`AmountMismatch` when the
    gateway took another amount (flagged, nothing paid); :class:`NotificationDisputed` when
    the notification claimed what the gateway does not bear out (flagged; the payment
    follows the gateway all the same); :class:`GatewayUnavailable` to retry."""
    async with store.transaction() as payments:
        stored = await payments.notification(provider, provider_event_id)
        if stored is None:
            raise NotificationNotKept(f"no {provider} notification {provider_event_id} kept")
        payment = await payments.get(stored.notification.order_id)
    notification = stored.notification
    if payment is None:
        log.info(
            "payment notification kept until its payment opens",
            order_id=str(notification.order_id),
            provider_event_id=provider_event_id,
        )
        return "waiting for the order's payment to open"
    charge = await gateway_of(gateways, notification.provider).status(notification.order_id)
    problem = disagreement(notification, charge)
    outcome, mismatch = await bring_to_gateway(
        store, payment, charge, stored=stored, dispute=problem
    )
    log.info(
        "payment notification processed",
        order_id=str(notification.order_id),
        provider_event_id=provider_event_id,
        gateway_status=charge.status if charge else None,
        outcome=outcome,
    )
    if mismatch is not None:
        raise AmountMismatch(mismatch)
    if problem is not None:
        raise NotificationDisputed(problem)
    return outcome


async def expire_payment(
    store: PaymentStore,
    gateways: Gateways,
    order_id: Any,
    log: Any,
    *,
    recheck_after: timedelta = REVIEW_RECHECK,
) -> str:
    """The window (and its grace) is over, or the order was cancelled: a payment the gateway
    took in time is paid, one still unpaid expires and PaymentExpired goes out
    (order-service cancels the order). A charge still waiting for the customer is closed at
    the gateway first, so that it can no longer be paid. A capture under the gateway's fraud
    review is the customer's payment in time: the payment is flagged for a person to approve
    or deny it, and its expiry asked again ``recheck_after`` later (at least
    :data:`REVIEW_RECHECK`)."""
    async with store.transaction() as payments:
        payment = await payments.get(order_id)
    if payment is None or payment.status not in (*UNPAID, PaymentStatus.EXPIRED):
        log.info("payment window over", order_id=str(order_id), outcome="nothing to expire")
        return "nothing to expire"
    charge = await charge_at_any(gateways, payment)
    if charge is not None and charge.in_review and payment.status in UNPAID:
        return await _wait_for_review(store, payment, max(recheck_after, REVIEW_RECHECK), log)
    if charge is not None and charge.state == ChargeState.PENDING:
        closed = await _closed(store, gateway_of(gateways, charge.provider), payment, log)
        # Closed by the shop, the charge did not fail: the payment expires, no PaymentFailed.
        charge = None if closed is not None and closed.state == ChargeState.FAILED else closed
    outcome, _ = await bring_to_gateway(store, payment, charge, expire=True)
    log.info("payment window over", order_id=str(order_id), outcome=outcome)
    return outcome


UNDER_REVIEW = "under review at the gateway"


async def _wait_for_review(
    store: PaymentStore, payment: Payment, recheck_after: timedelta, log: Any
) -> str:
    async with store.transaction() as payments:
        await payments.flag(
            payment,
            "a capture under fraud review at the gateway past its window: "
            "approve or deny it in the gateway's dashboard",
        )
        due = datetime.now(UTC) + recheck_after
        key = str(payment.order_id)
        await payments.add_event(ExpirePayment(order_id=payment.order_id), key=key, due_at=due)
    log.warning("payment window over", order_id=str(payment.order_id), outcome=UNDER_REVIEW)
    return UNDER_REVIEW


async def _closed(
    store: PaymentStore, gateway: PaymentGateway, payment: Payment, log: Any
) -> GatewayPayment | None:
    """The payment's charge once closed at the gateway, as its status then reads. A close
    refused because the charge moved on meanwhile (paid, failed) is what the status read
    shows; one refused while the charge still waits is flagged: the shop gives up on the
    order all the same, and a payment made later arrives late and is refunded."""
    try:
        await gateway.close(payment.order_id)
    except GatewayRefused as error:
        charge = await gateway.status(payment.order_id)
        if charge is not None and charge.state == ChargeState.PENDING:
            log.warning("charge not closed at the gateway", order_id=str(payment.order_id))
            async with store.transaction() as payments:
                await payments.flag(
                    payment, f"its charge could not be closed at the gateway: {error}"
                )
        return charge
    return await gateway.status(payment.order_id)


async def refund_payment(
    store: PaymentStore, gateways: Gateways, command: RefundPayment, log: Any
) -> str:
    """Give back what the shop cannot keep, through the gateway that took it, once per
    refund key; then read the gateway's record so that the refund is recorded as it lists
    it. :class:`GatewayRefused` is flagged on the payment and raised (a person decides)."""
    async with store.transaction() as payments:
        payment = await payments.get(command.order_id)
    if payment is None or payment.status != PaymentStatus.REFUND_DUE:
        return "no refund due"
    if payment.refund_refused:
        # A person gives it back by hand now: asked again (a redelivery, a redrive), a card's
        # refund could go through as well and pay the customer twice.
        return "refund refused: given back by hand"
    if payment.provider is None:
        raise GatewayRefused(f"payment {payment.id} names no gateway to refund through")
    gateway = gateway_of(gateways, payment.provider)
    # What the gateway gave back already (from its dashboard, or this refund's earlier try)
    # first: the refund asks only for what is left.
    before = await gateway.status(payment.order_id)
    await bring_to_gateway(store, payment, before)
    async with store.transaction() as payments:
        payment = await payments.get(command.order_id) or payment
    if payment.status != PaymentStatus.REFUND_DUE:
        return "refunded already"
    amount = refund_left(payment)
    if amount > 0:
        request = RefundRequest(payment.order_id, command.refund_key, amount, command.reason)
        try:
            await gateway.refund(request)
        except GatewayRefused as error:
            return await _refund_refused(store, gateway, payment, before, error)
    charge = await gateway.status(payment.order_id)
    outcome, _ = await bring_to_gateway(store, payment, charge)
    async with store.transaction() as payments:
        after = await payments.get(payment.order_id)
    if after is not None and after.status == PaymentStatus.REFUND_DUE:
        raise RefundNotListed(f"the gateway took the refund of {payment.id} but lists it not yet")
    log.info("refund made", order_id=str(payment.order_id), amount=amount, outcome=outcome)
    return outcome


async def _refund_refused(
    store: PaymentStore,
    gateway: PaymentGateway,
    payment: Payment,
    before: GatewayPayment | None,
    error: GatewayRefused,
) -> str:
    """A refusal is read against the gateway's record first: a refund (or cancel) made
    already, whose answer was lost, is refused when asked again; a charge that moved on
    meanwhile (a capture settled) takes another call now. Only a refusal of a charge as it
    was is flagged for a person, and raised."""
    after = await gateway.status(payment.order_id)
    outcome, _ = await bring_to_gateway(store, payment, after)
    async with store.transaction() as payments:
        current = await payments.get(payment.order_id) or payment
    if current.status != PaymentStatus.REFUND_DUE:
        return outcome
    if after is not None and before is not None and after.status != before.status:
        raise ChargeMovedOn(
            f"the charge moved on from {before.status} to {after.status} while it was being "
            f"refunded ({error}): asked again"
        )
    async with store.transaction() as payments:
        await payments.flag(current, f"{REFUND_REFUSED}: {error}")
    raise error


async def record_refund_by_hand(
    store: PaymentStore, order_id: Any, *, reference: str, amount: int | None, log: Any
) -> PaymentStatus:
    """A person gave the money back outside the gateway (a bank transfer Midtrans cannot
    refund): recorded once per ``reference`` as a refund, told as PaymentReversed like any
    other, so that the payment (and its order's ``refund_due``) ends. The payment's status
    after it; :class:`RefundByHandRefused` when nothing is due or the amount is wrong."""
    async with store.transaction() as payments:
        payment = await payments.get(order_id, lock=True)
        if payment is None:
            raise RefundByHandRefused(f"no payment for order {order_id}")
        step = refund_by_hand(payment, reference, amount)
        if step is not None:
            _, payment = await _apply(payments, payment, step)
    log.info(
        "refund by hand recorded" if step else "refund by hand recorded already",
        order_id=str(order_id),
        reference=reference,
        status=payment.status,
    )
    return payment.status


def gateway_of(gateways: Gateways, provider: Provider) -> PaymentGateway:
    try:
        return gateways[provider]
    except KeyError:
        raise GatewayNotConfigured(f"no {provider} gateway is configured to ask") from None


async def charge_at_any(gateways: Gateways, payment: Payment) -> GatewayPayment | None:
    """The gateway that took the payment's money knows; before any did, each is asked, and
    a charge that took money wins over one still pending."""
    if payment.provider is not None:
        return await gateway_of(gateways, payment.provider).status(payment.order_id)
    charges = [await gateway.status(payment.order_id) for gateway in gateways.values()]
    found = [charge for charge in charges if charge is not None]
    taken = [c for c in found if c.state in (ChargeState.PAID, ChargeState.VOIDED)]
    return next(iter(taken or found), None)


async def bring_to_gateway(
    store: PaymentStore,
    seen: Payment,
    charge: GatewayPayment | None,
    *,
    stored: StoredNotification | None = None,
    dispute: str | None = None,
    expire: bool = False,
) -> tuple[str, str | None]:
    """Under the payment's lock: apply the steps that bring it to ``charge`` (and expire it
    when asked and still unpaid); record the notification's outcome and any flag. The
    outcome's words, and the mismatch's reason when there was one."""
    async with store.transaction() as payments:
        payment = await payments.get(seen.order_id, lock=True) or seen
        steps = steps_to_match(payment, charge)
        words = []
        for step in steps:
            said, payment = await _apply(payments, payment, step)
            words.append(said)
        if expire and payment.status in UNPAID:
            words.append(await _expire(payments, payment))
        mismatch = next((step.reason for step in steps if isinstance(step, Mismatch)), None)
        flag = "; ".join(filter(None, (mismatch, dispute)))
        if flag:
            await payments.flag(payment, flag)
        outcome = "; ".join(words) or _nothing_to_do(payment, charge)
        if dispute:
            outcome = f"flagged: {dispute}; {outcome}"
        if stored is not None:
            await payments.settle(stored, outcome)
    return outcome, mismatch


def _nothing_to_do(payment: Payment, charge: GatewayPayment | None) -> str:
    if charge is None:
        return f"the gateway has no payment yet; {payment.status} as it was"
    return f"the gateway says {charge.status}; {payment.status} as it was"


async def _apply(payments: Payments, payment: Payment, step: Step) -> tuple[str, Payment]:
    """Apply one step; its words, and the payment as it is after it."""
    key = str(payment.order_id)
    now = datetime.now(UTC)
    match step:
        case Pay(charge):
            paid_at = charge.settled_at or now
            await payments.set_status(payment, PaymentStatus.PAID, charge=charge, paid_at=paid_at)
            await payments.add_event(
                PaymentReceived(
                    payment_id=payment.id,
                    order_id=payment.order_id,
                    provider_event_id=charge.transaction_id,
                    amount=charge.amount,
                    currency=charge.currency,
                    paid_at=paid_at,
                ),
                key=key,
            )
            return "paid", _moved(payment, PaymentStatus.PAID, charge)
        case Fail(charge):
            await payments.set_status(payment, PaymentStatus.FAILED, charge=charge)
            await payments.add_event(
                PaymentFailed(
                    payment_id=payment.id,
                    order_id=payment.order_id,
                    provider_event_id=charge.transaction_id,
                    reason=f"{charge.status} at the gateway",
                    failed_at=now,
                ),
                key=key,
            )
            return "failed at the gateway", _moved(payment, PaymentStatus.FAILED, charge)
        case TakeLate(charge):
            await payments.set_status(
                payment, PaymentStatus.REFUND_DUE, charge=charge, paid_at=charge.settled_at or now
            )
            await ask_refund(payments, payment, "paid after its payment window ended")
            return "paid late: refund due", _moved(payment, PaymentStatus.REFUND_DUE, charge)
        case Reverse(reversal, status, total):
            recorded = await payments.record_reversal(payment, reversal, status=status)
            if recorded:
                await payments.add_event(
                    PaymentReversed(
                        payment_id=payment.id,
                        order_id=payment.order_id,
                        kind=reversal.kind,
                        reference=reversal.reference,
                        amount=reversal.amount,
                        reversed_total=total,
                        paid_amount=payment.amount,
                        currency=payment.currency,
                        reason=_REVERSAL_REASONS[reversal.kind],
                        reversed_at=reversal.at or now,
                    ),
                    key=key,
                )
            after = replace(
                payment,
                status=status,
                reversed_amount=total,
                reversals=payment.reversals | {reversal.reference},
            )
            return f"{reversal.kind} {reversal.reference} of {reversal.amount}: {status}", after
        case Mismatch(reason):
            return f"not paid: {reason}", payment


def _moved(payment: Payment, status: PaymentStatus, charge: GatewayPayment) -> Payment:
    return replace(
        payment, status=status, provider=charge.provider, provider_payment_id=charge.transaction_id
    )


_REVERSAL_REASONS = {
    ReversalKind.REFUND: "refunded through the gateway",
    ReversalKind.CHARGEBACK: "charged back by the customer's bank",
    ReversalKind.VOID: "the card payment was cancelled at the gateway before it settled",
}


async def ask_refund(payments: Payments, payment: Payment, reason: str) -> None:
    await payments.add_event(
        RefundPayment(
            payment_id=payment.id,
            order_id=payment.order_id,
            amount=refund_left(payment),
            refund_key=f"refund-{payment.id}",
            reason=reason,
        ),
        key=str(payment.order_id),
    )


async def _expire(payments: Payments, payment: Payment) -> str:
    await payments.set_status(payment, PaymentStatus.EXPIRED)
    await payments.add_event(
        PaymentExpired(
            payment_id=payment.id, order_id=payment.order_id, expired_at=datetime.now(UTC)
        ),
        key=str(payment.order_id),
    )
    return "expired: not paid in its window"
