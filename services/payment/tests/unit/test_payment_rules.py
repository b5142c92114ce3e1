"""The rules that bring a payment to what its gateway records, and that tell a notification
the gateway does not bear out: pure functions, on values."""

from __future__ import annotations

import uuid
from dataclasses import replace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from shop.payment.domain.gateway import ChargeState, GatewayPayment, GatewayReversal, ReversalKind
from shop.payment.domain.notifications import Meaning, Notification, Provider
from shop.payment.domain.payments import (
    Fail,
    Mismatch,
    Pay,
    Payment,
    Reverse,
    TakeLate,
    disagreement,
    steps_to_match,
)
from shop.payment.domain.status import (
    ALLOWED,
    InvalidPaymentTransition,
    PaymentStatus,
    check_transition,
)

ORDER = uuid.UUID("6f1c2a4e-8d3b-4c1a-9e2f-0a1b2c3d4e5f")
TOTAL = 178000


def payment(status: PaymentStatus, **changes: object) -> Payment:
    base = Payment(uuid.uuid4(), ORDER, TOTAL, "IDR", status)
    if status not in (PaymentStatus.PENDING, PaymentStatus.EXPIRED):
        base = replace(base, provider=Provider.MIDTRANS, provider_payment_id="tx-1")
    return replace(base, **changes)  # type: ignore[arg-type]


def charge(
    state: ChargeState,
    *reversals: GatewayReversal,
    status: str = "settlement",
    amount: int = TOTAL,
    transaction_id: str = "tx-1",
) -> GatewayPayment:
    return GatewayPayment(
        Provider.MIDTRANS, ORDER, transaction_id, status, state, amount, "IDR", reversals
    )


def refund(reference: str, amount: int) -> GatewayReversal:
    return GatewayReversal(ReversalKind.REFUND, reference, amount)


def test_a_settlement_pays_a_pending_payment() -> None:
    assert steps_to_match(payment(PaymentStatus.PENDING), charge(ChargeState.PAID)) == [
        Pay(charge(ChargeState.PAID))
    ]


def test_a_settlement_pays_a_payment_whose_earlier_try_failed() -> None:
    steps = steps_to_match(payment(PaymentStatus.FAILED), charge(ChargeState.PAID))
    assert [type(step) for step in steps] == [Pay]


def test_a_settlement_after_expiry_is_taken_late_to_be_refunded() -> None:
    steps = steps_to_match(payment(PaymentStatus.EXPIRED), charge(ChargeState.PAID))
    assert [type(step) for step in steps] == [TakeLate]


@pytest.mark.parametrize("state", [ChargeState.PENDING])
def test_nothing_moves_while_the_gateway_waits(state: ChargeState) -> None:
    assert steps_to_match(payment(PaymentStatus.PENDING), charge(state, status="pending")) == []


def test_nothing_moves_when_the_gateway_has_no_charge() -> None:
    assert steps_to_match(payment(PaymentStatus.PENDING), None) == []


def test_a_refusal_fails_a_pending_payment_once() -> None:
    refused = charge(ChargeState.FAILED, status="deny")
    assert steps_to_match(payment(PaymentStatus.PENDING), refused) == [Fail(refused)]
    assert steps_to_match(payment(PaymentStatus.FAILED), refused) == []


def test_another_amount_is_a_mismatch_naming_both() -> None:
    steps = steps_to_match(payment(PaymentStatus.PENDING), charge(ChargeState.PAID, amount=1000))
    assert steps == [Mismatch("the gateway took 1000 IDR, but the order is 178000 IDR")]


def test_a_paid_payment_stays_paid_on_the_same_answer() -> None:
    assert steps_to_match(payment(PaymentStatus.PAID), charge(ChargeState.PAID)) == []


def test_two_partial_refunds_are_two_reversals_and_then_refunded() -> None:
    first, second = refund("1", 78000), refund("2", 100000)
    steps = steps_to_match(
        payment(PaymentStatus.PAID), charge(ChargeState.PAID, first, second, status="refund")
    )
    assert steps == [
        Reverse(first, PaymentStatus.PARTIALLY_REFUNDED, 78000),
        Reverse(second, PaymentStatus.REFUNDED, TOTAL),
    ]


def test_a_reversal_recorded_already_is_not_applied_again() -> None:
    first, second = refund("1", 78000), refund("2", 50000)
    seen = payment(PaymentStatus.PARTIALLY_REFUNDED, reversed_amount=78000, reversals={"1"})
    steps = steps_to_match(seen, charge(ChargeState.PAID, first, second))
    assert steps == [Reverse(second, PaymentStatus.PARTIALLY_REFUNDED, 128000)]


def test_a_chargeback_is_a_chargeback_however_much_it_took() -> None:
    chargeback = GatewayReversal(ReversalKind.CHARGEBACK, "cb-1", 1000)
    steps = steps_to_match(payment(PaymentStatus.PAID), charge(ChargeState.PAID, chargeback))
    assert steps == [Reverse(chargeback, PaymentStatus.CHARGED_BACK, 1000)]


def test_a_capture_voided_gives_everything_back() -> None:
    steps = steps_to_match(payment(PaymentStatus.PAID), charge(ChargeState.VOIDED, status="cancel"))
    assert steps == [
        Reverse(
            GatewayReversal(ReversalKind.VOID, "tx-1:void", TOTAL), PaymentStatus.REFUNDED, TOTAL
        )
    ]


def test_a_settled_charge_denied_after_is_a_void_of_what_was_left() -> None:
    seen = payment(PaymentStatus.PARTIALLY_REFUNDED, reversed_amount=78000, reversals={"1"})
    steps = steps_to_match(seen, charge(ChargeState.FAILED, status="deny"))
    void = GatewayReversal(ReversalKind.VOID, "tx-1:deny", 100000)
    assert steps == [Reverse(void, PaymentStatus.REFUNDED, TOTAL)]


def test_a_stale_refusal_of_another_charge_leaves_a_paid_payment_be() -> None:
    stale = charge(ChargeState.FAILED, status="deny", transaction_id="tx-0")
    assert steps_to_match(payment(PaymentStatus.PAID), stale) == []


def test_a_late_payment_refunded_at_once_ends_refunded() -> None:
    steps = steps_to_match(
        payment(PaymentStatus.EXPIRED), charge(ChargeState.PAID, refund("r", TOTAL))
    )
    assert [type(s) for s in steps] == [TakeLate, Reverse]
    assert steps[1] == Reverse(refund("r", TOTAL), PaymentStatus.REFUNDED, TOTAL)


def test_a_refund_due_partly_refunded_stays_due() -> None:
    steps = steps_to_match(
        payment(PaymentStatus.REFUND_DUE), charge(ChargeState.PAID, refund("r", 1))
    )
    assert steps == [Reverse(refund("r", 1), PaymentStatus.REFUND_DUE, 1)]


_PAYMENTS = st.builds(
    payment,
    st.sampled_from(PaymentStatus),
)
_CHARGES = st.one_of(
    st.none(),
    st.builds(
        charge,
        st.sampled_from(ChargeState),
        amount=st.sampled_from([TOTAL, 1000]),
        transaction_id=st.sampled_from(["tx-1", "tx-2"]),
    ),
)


@given(_PAYMENTS, _CHARGES)
def test_every_step_is_a_transition_the_state_machine_allows(
    seen: Payment, answer: GatewayPayment | None
) -> None:
    status = seen.status
    for step in steps_to_match(seen, answer):
        target = {
            Pay: PaymentStatus.PAID,
            Fail: PaymentStatus.FAILED,
            TakeLate: PaymentStatus.REFUND_DUE,
        }.get(type(step))
        if isinstance(step, Reverse):
            target = step.status
        if target is not None and target != status:
            check_transition(status, target)
            status = target


def test_every_state_is_in_the_state_machine_and_final_ones_go_nowhere() -> None:
    assert set(ALLOWED) == set(PaymentStatus)
    for final in (PaymentStatus.REFUNDED, PaymentStatus.CHARGED_BACK):
        for target in PaymentStatus:
            with pytest.raises(InvalidPaymentTransition):
                check_transition(final, target)


def test_a_paid_payment_never_goes_back_to_unpaid() -> None:
    for target in (PaymentStatus.PENDING, PaymentStatus.FAILED, PaymentStatus.EXPIRED):
        with pytest.raises(InvalidPaymentTransition):
            check_transition(PaymentStatus.PAID, target)


def notification(
    meaning: Meaning, *, type_: str, tx: str = "tx-1", amount: int = TOTAL
) -> Notification:
    return Notification(
        Provider.MIDTRANS, f"{tx}:{type_}", type_, meaning, ORDER, amount, "IDR", tx
    )


def test_a_cancel_edited_into_a_settlement_is_disputed_by_the_gateway() -> None:
    edited = notification(Meaning.PAID, type_="settlement")
    problem = disagreement(edited, charge(ChargeState.FAILED, status="cancel"))
    assert problem == "the notification says 'settlement', the gateway says 'cancel' for tx-1"


def test_a_settlement_of_another_transaction_is_disputed() -> None:
    forged = notification(Meaning.PAID, type_="settlement", tx="tx-forged")
    assert disagreement(forged, charge(ChargeState.PAID)) is not None


def test_a_notification_the_gateway_has_no_charge_for_is_disputed() -> None:
    assert "no payment" in (
        disagreement(notification(Meaning.PAID, type_="settlement"), None) or ""
    )


def test_an_old_pending_notice_after_the_settlement_is_no_dispute() -> None:
    old = notification(Meaning.PENDING, type_="pending")
    assert disagreement(old, charge(ChargeState.PAID)) is None


def test_a_failure_of_an_earlier_try_is_history_not_a_dispute() -> None:
    earlier = notification(Meaning.FAILED, type_="deny", tx="tx-0")
    assert disagreement(earlier, charge(ChargeState.PAID)) is None


def test_a_refund_the_gateway_does_not_list_is_disputed() -> None:
    claimed = notification(Meaning.REFUNDED, type_="refund")
    assert disagreement(claimed, charge(ChargeState.PAID)) is not None
    assert disagreement(claimed, charge(ChargeState.PAID, refund("1", 5))) is None


def test_a_chargeback_the_gateway_does_not_list_is_disputed() -> None:
    claimed = notification(Meaning.CHARGED_BACK, type_="chargeback")
    assert disagreement(claimed, charge(ChargeState.PAID, refund("1", 5))) is not None


def test_a_settlement_the_gateway_confirms_is_no_dispute() -> None:
    assert (
        disagreement(notification(Meaning.PAID, type_="settlement"), charge(ChargeState.PAID))
        is None
    )


def test_a_second_charge_for_an_order_paid_already_is_flagged_never_kept_silently() -> None:
    second = charge(ChargeState.PAID, transaction_id="tx-2")
    [step] = steps_to_match(payment(PaymentStatus.PAID), second)
    assert isinstance(step, Mismatch)
    assert "second charge tx-2" in step.reason


def test_reversals_of_another_charge_are_never_applied_to_the_payment() -> None:
    other = charge(ChargeState.PAID, refund("9", 1000), transaction_id="tx-2")
    steps = steps_to_match(payment(PaymentStatus.PAID), other)
    assert not any(isinstance(step, Reverse) for step in steps)


def test_a_capture_voided_before_the_shop_heard_of_it_is_no_payment() -> None:
    # An authorisation cancelled can read as a voided capture: nothing was kept, so the
    # shop never announces a payment only to reverse it.
    voided = charge(ChargeState.VOIDED, status="cancel")
    steps = steps_to_match(payment(PaymentStatus.PENDING), voided)
    assert [type(step) for step in steps] == [Fail]
