"""Properties of the order state machine over generated sequences of requests and events,
against the machine as the design states it (pending → paid → fulfilled, pending →
cancelled, a paid or fulfilled order's payment reversed in part, in full or charged back),
written out here apart from the table the code reads."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from itertools import pairwise

import pytest
from hypothesis import given
from hypothesis import strategies as st

from shop.contracts import ReversalKind
from shop.order.domain.errors import InvalidTransition
from shop.order.domain.orders import OrderView
from shop.order.domain.payments import PaymentConflict, payment_conflict
from shop.order.domain.reversals import ReversalOfUnpaidOrder, after_reversal
from shop.order.domain.status import OrderStatus, check_transition

PENDING, PAID, FULFILLED, CANCELLED = (
    OrderStatus.PENDING,
    OrderStatus.PAID,
    OrderStatus.FULFILLED,
    OrderStatus.CANCELLED,
)
PARTIAL, REFUNDED, CHARGED_BACK = (
    OrderStatus.PARTIALLY_REFUNDED,
    OrderStatus.REFUNDED,
    OrderStatus.CHARGED_BACK,
)
DESIGNED = {
    (PENDING, PAID),
    (PENDING, CANCELLED),
    (PAID, FULFILLED),
    (PAID, REFUNDED),
    (PAID, PARTIAL),
    (PAID, CHARGED_BACK),
    (FULFILLED, REFUNDED),
    (FULFILLED, PARTIAL),
    (FULFILLED, CHARGED_BACK),
    (PARTIAL, PARTIAL),
    (PARTIAL, REFUNDED),
    (PARTIAL, CHARGED_BACK),
}
"""The only moves an order makes (DESIGN.md §2)."""
TERMINAL = {REFUNDED, CHARGED_BACK, CANCELLED}
REACHABLE = {PENDING} | {target for _, target in DESIGNED}

statuses = st.sampled_from(list(OrderStatus))


def refusal(current: OrderStatus, target: OrderStatus) -> InvalidTransition | None:
    try:
        check_transition(current, target)
    except InvalidTransition as refused:
        return refused
    return None


def moved(current: OrderStatus, target: OrderStatus) -> OrderStatus:
    """``target`` if the machine lets ``current`` become it, else ``current`` (refused, with
    an error that names both)."""
    refused = refusal(current, target)
    if refused is None:
        return target
    assert (refused.current, refused.target) == (current, target)
    assert f"{current} cannot become {target}" in str(refused)
    return current


@given(statuses, statuses)
def test_a_transition_is_allowed_exactly_when_the_design_has_it(
    current: OrderStatus, target: OrderStatus
) -> None:
    assert (refusal(current, target) is None) == ((current, target) in DESIGNED)
    assert moved(current, target) == (target if (current, target) in DESIGNED else current)


@given(st.lists(statuses, max_size=20))
def test_any_sequence_of_requested_transitions_walks_only_designed_moves(
    requested: list[OrderStatus],
) -> None:
    status = PENDING
    path = [status]
    for target in requested:
        status = moved(status, target)
        if status != path[-1]:
            path.append(status)

    assert all(move in DESIGNED for move in pairwise(path))
    assert status in REACHABLE
    # Never back to a status it left: pending → paid → fulfilled → partially refunded →
    # refunded (or charged back) is the longest walk.
    assert len(path) == len(set(path)) <= 5


@given(st.sampled_from(sorted(TERMINAL)), st.lists(statuses, min_size=1, max_size=10))
def test_a_terminal_status_refuses_every_request(
    terminal: OrderStatus, requested: list[OrderStatus]
) -> None:
    for target in requested:
        with pytest.raises(InvalidTransition):
            check_transition(terminal, target)


@dataclass(frozen=True)
class PaymentArrived:
    right_amount: bool


@dataclass(frozen=True)
class CancelRequested:
    pass


@dataclass(frozen=True)
class Fulfilled:
    pass


@dataclass(frozen=True)
class Reversed:
    kind: ReversalKind
    full: bool


Event = PaymentArrived | CancelRequested | Fulfilled | Reversed
events = st.one_of(
    st.builds(PaymentArrived, st.booleans()),
    st.just(CancelRequested()),
    st.just(Fulfilled()),
    st.builds(Reversed, st.sampled_from(list(ReversalKind)), st.booleans()),
)

ORDER = OrderView(
    id=uuid.uuid4(),
    number="SK-TEST-0001",
    status=PENDING,
    lines=[],
    total=250000,
    currency="IDR",
    created_at=datetime(2026, 12, 2, 9, 30, tzinfo=UTC),
)


def after(status: OrderStatus, event: Event) -> OrderStatus:
    """The order's status after ``event``, as the use cases apply it: a payment through
    ``payment_conflict``, a cancellation and a fulfilment through the state machine."""
    match event:
        case PaymentArrived(right_amount=right):
            order = ORDER.model_copy(update={"status": status})
            amount = ORDER.total if right else ORDER.total + 1
            conflict = payment_conflict(order, amount=amount, currency=ORDER.currency)
            expected = {
                CANCELLED: PaymentConflict.REFUND_DUE,
                PENDING: None if right else PaymentConflict.AMOUNT_MISMATCH,
            }.get(status, PaymentConflict.DUPLICATE_PAYMENT)
            assert conflict == expected
            if conflict is not None:
                return status
            # A payment that settles the order is one the state machine allows.
            check_transition(status, PAID)
            return PAID
        case CancelRequested():
            return moved(status, CANCELLED)
        case Fulfilled():
            return moved(status, FULFILLED)
        case Reversed(kind=kind, full=full):
            paid = ORDER.total
            try:
                outcome = after_reversal(
                    status, kind=kind, reversed_total=paid if full else paid - 1, paid_amount=paid
                )
            except (ReversalOfUnpaidOrder, InvalidTransition):
                # Never paid, or final: the handler dead-letters it or leaves it as it is.
                assert status == PENDING or status in TERMINAL - {CANCELLED}
                return status
            assert outcome.resolves_refund_due == (status == CANCELLED and full)
            return outcome.status


@given(st.lists(events, max_size=20))
def test_any_sequence_of_order_events_ends_in_a_status_the_design_reaches(
    history: list[Event],
) -> None:
    status = PENDING
    for event in history:
        before, status = status, after(status, event)
        assert status == before or (before, status) in DESIGNED
        assert before not in TERMINAL or status == before
    assert status in REACHABLE
