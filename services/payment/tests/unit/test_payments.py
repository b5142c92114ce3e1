"""payment-service's use cases on fakes: every notification is confirmed with the gateway
before it moves money, early notifications wait for their payment, the window is expired by
payment-service alone, money it cannot keep is refunded, reversals are told."""

from __future__ import annotations

import uuid
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import structlog

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
    ReversalKind,
    examples,
)
from shop.payment.domain.errors import (
    AmountMismatch,
    GatewayRefused,
    GatewayUnavailable,
    NotificationDisputed,
    NotificationNotKept,
    RefundByHandRefused,
)
from shop.payment.domain.gateway import ChargeState, GatewayPayment, GatewayReversal
from shop.payment.domain.notifications import Meaning, Notification, Provider
from shop.payment.domain.status import PaymentStatus
from shop.payment.service_layer import payments
from shop.payment.service_layer.payments import PaymentWindow

from .fakes import FakeGateway, FakePaymentStore

ORDER = uuid.UUID("6f1c2a4e-8d3b-4c1a-9e2f-0a1b2c3d4e5f")
TOTAL = 250000
WINDOW = PaymentWindow(length=timedelta(minutes=30), grace=timedelta(minutes=1))
log = structlog.get_logger("test")


def order_created() -> OrderCreated:
    created = examples.examples()[OrderCreated]
    assert isinstance(created, OrderCreated)
    return created


def order_cancelled() -> OrderCancelled:
    cancelled = examples.examples()[OrderCancelled]
    assert isinstance(cancelled, OrderCancelled)
    return cancelled


def charge(
    state: ChargeState, status: str, *reversals: GatewayReversal, amount: int = TOTAL
) -> GatewayPayment:
    return GatewayPayment(
        Provider.MIDTRANS,
        ORDER,
        "tx-1",
        status,
        state,
        amount,
        "IDR",
        reversals,
        settled_at=datetime(2026, 12, 4, tzinfo=UTC) if state == ChargeState.PAID else None,
    )


def said(status: str, meaning: Meaning, *, tx: str = "tx-1") -> Notification:
    return Notification(
        Provider.MIDTRANS, f"{tx}:{status}", status, meaning, ORDER, TOTAL, "IDR", tx
    )


@pytest.fixture
def store() -> FakePaymentStore:
    return FakePaymentStore()


@pytest.fixture
def gateway() -> FakeGateway:
    return FakeGateway()


@pytest.fixture
def gateways(gateway: FakeGateway) -> dict[Provider, Any]:
    return {Provider.MIDTRANS: gateway}


async def opened(store: FakePaymentStore) -> None:
    async with store.transaction() as tx:
        await payments.open_payment(tx, order_created(), WINDOW)


async def notify(
    store: FakePaymentStore, gateways: dict[Provider, Any], notification: Notification
) -> str:
    store.keep(notification)
    return await payments.process_notification(
        store, gateways, "midtrans", notification.provider_event_id, log
    )


def status(store: FakePaymentStore) -> PaymentStatus:
    return store.state.payments[ORDER].status


async def test_opening_a_payment_schedules_its_expiry_after_the_window_and_grace(
    store: FakePaymentStore,
) -> None:
    await opened(store)

    [expiry] = [item for item in store.state.outbox if isinstance(item.message, ExpirePayment)]
    assert expiry.due_at == order_created().placed_at + timedelta(minutes=31)
    assert expiry.key == str(ORDER)


async def test_a_settlement_the_gateway_confirms_pays_once(
    store: FakePaymentStore, gateway: FakeGateway, gateways: dict[Provider, Any]
) -> None:
    await opened(store)
    gateway.charges[ORDER] = charge(ChargeState.PAID, "settlement")

    assert await notify(store, gateways, said("settlement", Meaning.PAID)) == "paid"
    await payments.process_notification(store, gateways, "midtrans", "tx-1:settlement", log)

    assert status(store) == PaymentStatus.PAID
    [received] = store.state.sent(PaymentReceived)
    assert isinstance(received, PaymentReceived)
    assert (received.amount, received.provider_event_id) == (TOTAL, "tx-1")


async def test_a_cancel_edited_into_a_settlement_does_not_pay_and_is_flagged(
    store: FakePaymentStore, gateway: FakeGateway, gateways: dict[Provider, Any]
) -> None:
    await opened(store)
    gateway.charges[ORDER] = charge(ChargeState.FAILED, "cancel")

    with pytest.raises(NotificationDisputed, match="says 'settlement', the gateway says 'cancel'"):
        await notify(store, gateways, said("settlement", Meaning.PAID))

    assert status(store) == PaymentStatus.FAILED, "the gateway's word, not the body's"
    assert store.state.sent(PaymentReceived) == []
    assert "the gateway says 'cancel'" in store.state.flags[ORDER]
    [outcome] = store.state.processed.values()
    assert outcome.startswith("flagged: ")


async def test_a_settlement_the_gateway_never_heard_of_is_flagged_and_pays_nothing(
    store: FakePaymentStore, gateways: dict[Provider, Any]
) -> None:
    await opened(store)

    with pytest.raises(NotificationDisputed, match="no payment for order"):
        await notify(store, gateways, said("settlement", Meaning.PAID))

    assert status(store) == PaymentStatus.PENDING


async def test_a_gateway_that_cannot_be_asked_is_retried_and_nothing_is_guessed(
    store: FakePaymentStore, gateway: FakeGateway, gateways: dict[Provider, Any]
) -> None:
    await opened(store)
    gateway.unavailable = True

    with pytest.raises(GatewayUnavailable):
        await notify(store, gateways, said("settlement", Meaning.PAID))

    assert status(store) == PaymentStatus.PENDING
    assert store.state.processed == {}, "asked again later, as new"


async def test_the_gateway_taking_another_amount_is_a_mismatch_flagged_not_paid(
    store: FakePaymentStore, gateway: FakeGateway, gateways: dict[Provider, Any]
) -> None:
    await opened(store)
    gateway.charges[ORDER] = charge(ChargeState.PAID, "settlement", amount=1000)

    with pytest.raises(AmountMismatch, match="took 1000 IDR, but the order is 250000 IDR"):
        await notify(store, gateways, said("settlement", Meaning.PAID))

    assert status(store) == PaymentStatus.PENDING
    assert ORDER in store.state.flags


async def test_a_notification_nobody_kept_is_refused(
    store: FakePaymentStore, gateways: dict[Provider, Any]
) -> None:
    with pytest.raises(NotificationNotKept):
        await payments.process_notification(store, gateways, "midtrans", "nope", log)


async def test_a_notification_before_its_payment_opens_waits_and_is_queued_again_on_open(
    store: FakePaymentStore, gateway: FakeGateway, gateways: dict[Provider, Any]
) -> None:
    gateway.charges[ORDER] = charge(ChargeState.PAID, "settlement")

    outcome = await notify(store, gateways, said("settlement", Meaning.PAID))

    assert outcome == "waiting for the order's payment to open"
    assert store.state.processed == {}, "kept unprocessed: no retry budget to run out"
    await opened(store)
    [again] = store.state.sent(ProcessPayment)
    assert again == ProcessPayment(provider_event_id="tx-1:settlement", provider="midtrans")
    await payments.process_notification(store, gateways, "midtrans", "tx-1:settlement", log)
    assert status(store) == PaymentStatus.PAID


async def test_the_window_ends_unpaid_and_the_payment_expires(
    store: FakePaymentStore, gateway: FakeGateway, gateways: dict[Provider, Any]
) -> None:
    await opened(store)
    gateway.charges[ORDER] = charge(ChargeState.PENDING, "pending")

    await payments.expire_payment(store, gateways, ORDER, log)

    assert status(store) == PaymentStatus.EXPIRED
    [expired] = store.state.sent(PaymentExpired)
    assert isinstance(expired, PaymentExpired)
    assert expired.order_id == ORDER


async def test_a_charge_still_waiting_at_expiry_is_closed_at_the_gateway_first(
    store: FakePaymentStore, gateway: FakeGateway, gateways: dict[Provider, Any]
) -> None:
    # Closed first, so that a customer cannot pay a virtual account the shop gave up on.
    await opened(store)
    gateway.charges[ORDER] = charge(ChargeState.PENDING, "pending")

    await payments.expire_payment(store, gateways, ORDER, log)

    assert gateway.closed == [ORDER]
    assert status(store) == PaymentStatus.EXPIRED
    assert len(store.state.sent(PaymentExpired)) == 1
    assert store.state.sent(PaymentFailed) == [], "closed by the shop, not failed"


async def test_a_charge_paid_while_it_is_being_closed_pays(
    store: FakePaymentStore, gateway: FakeGateway, gateways: dict[Provider, Any]
) -> None:
    await opened(store)
    gateway.charges[ORDER] = charge(ChargeState.PENDING, "pending")
    gateway.paid_before_closing = True

    await payments.expire_payment(store, gateways, ORDER, log)

    assert status(store) == PaymentStatus.PAID
    assert store.state.sent(PaymentExpired) == []
    assert len(store.state.sent(PaymentReceived)) == 1


async def test_a_capture_under_fraud_review_at_expiry_waits_for_the_review(
    store: FakePaymentStore, gateway: FakeGateway, gateways: dict[Provider, Any]
) -> None:
    # Midtrans holds a card capture flagged "challenge" until it is approved or denied: the
    # customer paid in time, so the window cannot end it; the expiry is asked again later.
    await opened(store)
    gateway.charges[ORDER] = replace(charge(ChargeState.PENDING, "capture"), in_review=True)
    before = datetime.now(UTC)

    outcome = await payments.expire_payment(store, gateways, ORDER, log, recheck_after=WINDOW.grace)

    assert outcome == "under review at the gateway"
    assert status(store) == PaymentStatus.PENDING
    assert "approve or deny" in store.state.flags[ORDER], "a person settles the review"
    assert gateway.closed == []
    assert store.state.sent(PaymentExpired) == []
    [*_, again] = [item for item in store.state.outbox if isinstance(item.message, ExpirePayment)]
    assert again.due_at is not None
    assert again.due_at >= before + payments.REVIEW_RECHECK

    gateway.charges[ORDER] = charge(ChargeState.PAID, "capture")
    await payments.expire_payment(store, gateways, ORDER, log)
    assert status(store) == PaymentStatus.PAID


async def test_a_close_refused_while_the_charge_still_waits_flags_the_payment(
    store: FakePaymentStore, gateway: FakeGateway, gateways: dict[Provider, Any]
) -> None:
    # The shop gives up on the order all the same; a payment made later arrives late and
    # is refunded, but a person should know the charge stayed open.
    await opened(store)
    gateway.charges[ORDER] = charge(ChargeState.PENDING, "pending")
    gateway.close_refusal = "401 unauthorized"

    await payments.expire_payment(store, gateways, ORDER, log)

    assert status(store) == PaymentStatus.EXPIRED
    assert "could not be closed at the gateway" in store.state.flags[ORDER]
    assert "401" in store.state.flags[ORDER]


async def test_a_cancelled_orders_charge_still_waiting_is_closed_at_once(
    store: FakePaymentStore, gateway: FakeGateway, gateways: dict[Provider, Any]
) -> None:
    await opened(store)
    gateway.charges[ORDER] = charge(ChargeState.PENDING, "pending")
    async with store.transaction() as tx:
        await payments.cancel_payment(tx, order_cancelled(), log)
    [*_, now] = [item for item in store.state.outbox if isinstance(item.message, ExpirePayment)]
    assert now.due_at is None, "at once, not at the window's end"

    await payments.expire_payment(store, gateways, ORDER, log)

    assert gateway.closed == [ORDER]
    assert status(store) == PaymentStatus.EXPIRED
    assert store.state.sent(PaymentExpired) == [], "the order is cancelled already"


async def test_an_expired_payment_whose_charge_was_paid_meanwhile_is_refunded(
    store: FakePaymentStore, gateway: FakeGateway, gateways: dict[Provider, Any]
) -> None:
    await opened(store)
    async with store.transaction() as tx:
        await payments.cancel_payment(tx, order_cancelled(), log)
    gateway.charges[ORDER] = charge(ChargeState.PAID, "settlement")

    await payments.expire_payment(store, gateways, ORDER, log)

    assert status(store) == PaymentStatus.REFUND_DUE
    assert len(store.state.sent(RefundPayment)) == 1


async def test_a_settlement_in_the_window_that_no_notification_brought_pays_at_expiry(
    store: FakePaymentStore, gateway: FakeGateway, gateways: dict[Provider, Any]
) -> None:
    await opened(store)
    gateway.charges[ORDER] = charge(ChargeState.PAID, "settlement")

    await payments.expire_payment(store, gateways, ORDER, log)

    assert status(store) == PaymentStatus.PAID
    assert store.state.sent(PaymentExpired) == []
    assert len(store.state.sent(PaymentReceived)) == 1


async def test_an_expiry_after_the_payment_was_paid_changes_nothing(
    store: FakePaymentStore, gateway: FakeGateway, gateways: dict[Provider, Any]
) -> None:
    await opened(store)
    gateway.charges[ORDER] = charge(ChargeState.PAID, "settlement")
    await notify(store, gateways, said("settlement", Meaning.PAID))

    assert await payments.expire_payment(store, gateways, ORDER, log) == "nothing to expire"
    assert store.state.sent(PaymentExpired) == []


async def test_a_failed_try_then_the_window_ends_expires(
    store: FakePaymentStore, gateway: FakeGateway, gateways: dict[Provider, Any]
) -> None:
    await opened(store)
    gateway.charges[ORDER] = charge(ChargeState.FAILED, "deny")
    await notify(store, gateways, said("deny", Meaning.FAILED))
    assert status(store) == PaymentStatus.FAILED
    assert len(store.state.sent(PaymentFailed)) == 1

    await payments.expire_payment(store, gateways, ORDER, log)

    assert status(store) == PaymentStatus.EXPIRED


async def test_a_settlement_after_expiry_is_refunded_once_and_told(
    store: FakePaymentStore, gateway: FakeGateway, gateways: dict[Provider, Any]
) -> None:
    await opened(store)
    await payments.expire_payment(store, gateways, ORDER, log)
    gateway.charges[ORDER] = charge(ChargeState.PAID, "settlement")

    await notify(store, gateways, said("settlement", Meaning.PAID))

    assert status(store) == PaymentStatus.REFUND_DUE
    assert store.state.sent(PaymentReceived) == [], "never paid: its order is gone"
    [command] = store.state.sent(RefundPayment)
    assert isinstance(command, RefundPayment)
    assert command.amount == TOTAL
    await payments.refund_payment(store, gateways, command, log)
    await payments.refund_payment(store, gateways, command, log)

    assert status(store) == PaymentStatus.REFUNDED
    assert len(gateway.refunds) == 1
    [reversed_] = store.state.sent(PaymentReversed)
    assert isinstance(reversed_, PaymentReversed)
    assert (reversed_.kind, reversed_.amount, reversed_.reversed_total) == (
        ReversalKind.REFUND,
        TOTAL,
        TOTAL,
    )


async def test_a_refund_the_gateway_refuses_is_flagged_and_refused(
    store: FakePaymentStore, gateway: FakeGateway, gateways: dict[Provider, Any]
) -> None:
    await opened(store)
    await payments.expire_payment(store, gateways, ORDER, log)
    gateway.charges[ORDER] = charge(ChargeState.PAID, "settlement")
    await notify(store, gateways, said("settlement", Meaning.PAID))
    gateway.refusal = "refund is not allowed for this payment type"
    [command] = store.state.sent(RefundPayment)
    assert isinstance(command, RefundPayment)

    with pytest.raises(GatewayRefused):
        await payments.refund_payment(store, gateways, command, log)

    assert status(store) == PaymentStatus.REFUND_DUE
    assert "refund is not allowed" in store.state.flags[ORDER]


async def late_refund_due(
    store: FakePaymentStore, gateway: FakeGateway, gateways: dict[Provider, Any]
) -> RefundPayment:
    await opened(store)
    await payments.expire_payment(store, gateways, ORDER, log)
    gateway.charges[ORDER] = charge(ChargeState.PAID, "settlement")
    await notify(store, gateways, said("settlement", Meaning.PAID))
    [command] = store.state.sent(RefundPayment)
    assert isinstance(command, RefundPayment)
    return command


async def test_a_refund_refused_because_it_was_made_already_is_recorded_not_flagged(
    store: FakePaymentStore, gateway: FakeGateway, gateways: dict[Provider, Any]
) -> None:
    # A cancel whose answer was lost, tried again: the gateway refuses what it has done.
    command = await late_refund_due(store, gateway, gateways)
    gateway.refused_once_done = True

    await payments.refund_payment(store, gateways, command, log)

    assert status(store) == PaymentStatus.REFUNDED
    assert ORDER not in store.state.flags


async def test_a_refund_refused_because_the_charge_moved_on_is_tried_again_not_flagged(
    store: FakePaymentStore, gateway: FakeGateway, gateways: dict[Provider, Any]
) -> None:
    # A capture read unsettled (so cancelled) settles before the cancel lands: the refund
    # API takes it now.
    command = await late_refund_due(store, gateway, gateways)
    gateway.refusal = "412 Merchant cannot modify the status of the transaction"
    gateway.moves_on_when_refused = "settlement_batch"

    with pytest.raises(GatewayUnavailable, match="moved on"):
        await payments.refund_payment(store, gateways, command, log)

    assert status(store) == PaymentStatus.REFUND_DUE
    assert ORDER not in store.state.flags


async def test_an_order_cancelled_once_paid_gets_its_money_back(
    store: FakePaymentStore, gateway: FakeGateway, gateways: dict[Provider, Any]
) -> None:
    await opened(store)
    gateway.charges[ORDER] = charge(ChargeState.PAID, "settlement")
    await notify(store, gateways, said("settlement", Meaning.PAID))

    async with store.transaction() as tx:
        await payments.cancel_payment(tx, order_cancelled(), log)

    assert status(store) == PaymentStatus.REFUND_DUE
    [command] = store.state.sent(RefundPayment)
    assert isinstance(command, RefundPayment)
    await payments.refund_payment(store, gateways, command, log)
    assert status(store) == PaymentStatus.REFUNDED


async def test_two_partial_refunds_are_two_reversals(
    store: FakePaymentStore, gateway: FakeGateway, gateways: dict[Provider, Any]
) -> None:
    await opened(store)
    gateway.charges[ORDER] = charge(ChargeState.PAID, "settlement")
    await notify(store, gateways, said("settlement", Meaning.PAID))
    first = GatewayReversal(ReversalKind.REFUND, "1", 50000)
    second = GatewayReversal(ReversalKind.REFUND, "2", 70000)

    gateway.charges[ORDER] = charge(ChargeState.PAID, "partial_refund", first)
    await notify(store, gateways, said("partial_refund", Meaning.REFUNDED))
    gateway.charges[ORDER] = charge(ChargeState.PAID, "partial_refund", first, second)
    second_notice = said("partial_refund", Meaning.REFUNDED)
    store.keep(replace(second_notice, provider_event_id="tx-1:partial_refund:2"))
    await payments.process_notification(store, gateways, "midtrans", "tx-1:partial_refund:2", log)

    assert status(store) == PaymentStatus.PARTIALLY_REFUNDED
    told = [e for e in store.state.sent(PaymentReversed) if isinstance(e, PaymentReversed)]
    totals = [(e.amount, e.reversed_total) for e in told]
    assert totals == [(50000, 50000), (70000, 120000)]


async def test_a_chargeback_ends_charged_back_and_is_told(
    store: FakePaymentStore, gateway: FakeGateway, gateways: dict[Provider, Any]
) -> None:
    await opened(store)
    gateway.charges[ORDER] = charge(ChargeState.PAID, "settlement")
    await notify(store, gateways, said("settlement", Meaning.PAID))
    chargeback = GatewayReversal(ReversalKind.CHARGEBACK, "cb-1", TOTAL)
    gateway.charges[ORDER] = charge(ChargeState.PAID, "chargeback", chargeback)

    await notify(store, gateways, said("chargeback", Meaning.CHARGED_BACK))

    assert status(store) == PaymentStatus.CHARGED_BACK
    [told] = store.state.sent(PaymentReversed)
    assert isinstance(told, PaymentReversed)
    assert told.kind == ReversalKind.CHARGEBACK


async def test_a_refund_asks_only_for_what_the_gateway_has_not_given_back_already(
    store: FakePaymentStore, gateway: FakeGateway, gateways: dict[Provider, Any]
) -> None:
    await opened(store)
    await payments.expire_payment(store, gateways, ORDER, log)
    gateway.charges[ORDER] = charge(ChargeState.PAID, "settlement")
    await notify(store, gateways, said("settlement", Meaning.PAID))
    [command] = store.state.sent(RefundPayment)
    assert isinstance(command, RefundPayment)
    # Meanwhile someone refunded part of it from the gateway's dashboard.
    earlier = GatewayReversal(ReversalKind.REFUND, "dashboard", 1000)
    gateway.charges[ORDER] = charge(ChargeState.PAID, "partial_refund", earlier)

    await payments.refund_payment(store, gateways, command, log)

    assert status(store) == PaymentStatus.REFUNDED
    assert [r.amount for r in gateway.refunds.values()] == [TOTAL - 1000]


async def test_a_refund_made_by_hand_ends_a_refund_the_gateway_refused_and_is_told(
    store: FakePaymentStore, gateway: FakeGateway, gateways: dict[Provider, Any]
) -> None:
    # A late bank transfer: Midtrans cannot refund it, a person transfers the money back.
    command = await late_refund_due(store, gateway, gateways)
    gateway.refusal = "cannot refund a bank_transfer payment through its API"
    with pytest.raises(GatewayRefused):
        await payments.refund_payment(store, gateways, command, log)

    status_after = await payments.record_refund_by_hand(
        store, ORDER, reference="BCA-2026-12-04-0042", amount=None, log=log
    )

    assert status_after == PaymentStatus.REFUNDED
    [told] = store.state.sent(PaymentReversed)
    assert isinstance(told, PaymentReversed)
    assert (told.kind, told.reference, told.amount, told.reversed_total) == (
        ReversalKind.REFUND,
        "by-hand:BCA-2026-12-04-0042",
        TOTAL,
        TOTAL,
    )
    again = await payments.record_refund_by_hand(
        store, ORDER, reference="BCA-2026-12-04-0042", amount=None, log=log
    )
    assert again == PaymentStatus.REFUNDED
    assert len(store.state.sent(PaymentReversed)) == 1, "recorded once"


@pytest.mark.parametrize(("amount", "problem"), [(TOTAL + 1, "more than the"), (0, "more than 0")])
async def test_a_refund_by_hand_of_more_than_is_due_or_of_nothing_is_refused(
    store: FakePaymentStore,
    gateway: FakeGateway,
    gateways: dict[Provider, Any],
    amount: int,
    problem: str,
) -> None:
    command = await late_refund_due(store, gateway, gateways)
    gateway.refusal = "cannot refund a bank_transfer payment through its API"
    with pytest.raises(GatewayRefused):
        await payments.refund_payment(store, gateways, command, log)

    with pytest.raises(RefundByHandRefused, match=problem):
        await payments.record_refund_by_hand(store, ORDER, reference="r", amount=amount, log=log)

    assert status(store) == PaymentStatus.REFUND_DUE


async def test_a_refund_by_hand_while_the_gateway_may_still_refund_is_refused(
    store: FakePaymentStore, gateway: FakeGateway, gateways: dict[Provider, Any]
) -> None:
    # The gateway's own refund may be on its way: money given back by hand as well would
    # be given back twice.
    await late_refund_due(store, gateway, gateways)

    with pytest.raises(RefundByHandRefused, match="the gateway has not refused"):
        await payments.record_refund_by_hand(store, ORDER, reference="r", amount=None, log=log)

    assert status(store) == PaymentStatus.REFUND_DUE


async def test_a_refund_by_hand_of_a_payment_the_shop_keeps_is_refused(
    store: FakePaymentStore, gateway: FakeGateway, gateways: dict[Provider, Any]
) -> None:
    await opened(store)
    gateway.charges[ORDER] = charge(ChargeState.PAID, "settlement")
    await notify(store, gateways, said("settlement", Meaning.PAID))

    with pytest.raises(RefundByHandRefused, match="is paid: no refund is due"):
        await payments.record_refund_by_hand(store, ORDER, reference="r", amount=None, log=log)
    with pytest.raises(RefundByHandRefused, match="no payment"):
        await payments.record_refund_by_hand(
            store, uuid.uuid4(), reference="r", amount=None, log=log
        )


async def test_a_refund_the_gateway_refused_is_not_asked_for_again(
    store: FakePaymentStore, gateway: FakeGateway, gateways: dict[Provider, Any]
) -> None:
    # Once refused, a person gives the money back by hand: a card's refund asked for again
    # later (a redelivery, a redrive) could go through and pay the customer twice.
    command = await late_refund_due(store, gateway, gateways)
    gateway.refusal = "412 Merchant cannot modify the status of the transaction"
    with pytest.raises(GatewayRefused):
        await payments.refund_payment(store, gateways, command, log)
    gateway.refusal = None

    outcome = await payments.refund_payment(store, gateways, command, log)

    assert outcome == "refund refused: given back by hand"
    assert gateway.refunds == {}
    assert status(store) == PaymentStatus.REFUND_DUE
