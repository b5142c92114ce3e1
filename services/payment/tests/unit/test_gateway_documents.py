"""Midtrans' status documents, as its Core API answers ``GET /v2/{order_id}/status``, read
into the shop's words by ``adapters/gateway_midtrans.py`` (no HTTP here: the over-the-wire
tests are in ``integration/test_gateway_clients.py``)."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from shop.payment.adapters.gateway_midtrans import read_status
from shop.payment.domain.errors import GatewayUnavailable
from shop.payment.domain.gateway import ChargeState, ReversalKind

ORDER = uuid.UUID("7b3f2d7e-4a55-4c55-9a52-1d4b3c2e9f10")


def document(status: str, **fields: Any) -> dict[str, Any]:
    """A status document shaped as Midtrans answers one (bank transfer unless told)."""
    return {
        "status_code": "200",
        "status_message": "Success, transaction is found",
        "transaction_id": "b7a9c1e2-5f3d-4a8e-9c0b-2d1e3f4a5b6c",
        "order_id": str(ORDER),
        "gross_amount": "178000.00",
        "currency": "IDR",
        "payment_type": "bank_transfer",
        "transaction_time": "2026-12-04 10:15:02",
        "transaction_status": status,
        "fraud_status": "accept",
        **fields,
    }


@pytest.mark.parametrize(
    ("status", "fraud", "state"),
    [
        ("settlement", "accept", ChargeState.PAID),
        ("capture", "accept", ChargeState.PAID),
        ("capture", "challenge", ChargeState.PENDING),
        ("pending", "accept", ChargeState.PENDING),
        ("authorize", "accept", ChargeState.PENDING),
        ("deny", "deny", ChargeState.FAILED),
        ("expire", "accept", ChargeState.FAILED),
        ("failure", "accept", ChargeState.FAILED),
        ("cancel", "accept", ChargeState.FAILED),
    ],
)
def test_each_status_reads_as_its_charge_state(status: str, fraud: str, state: ChargeState) -> None:
    payment = read_status(ORDER, document(status, fraud_status=fraud))
    assert (payment.state, payment.status, payment.amount) == (state, status, 178000)
    assert payment.reversals == ()


def test_a_card_cancelled_after_its_capture_is_voided() -> None:
    captured = document("cancel", payment_type="credit_card", approval_code="1733300000000")
    assert read_status(ORDER, captured).state == ChargeState.VOIDED


def test_a_capture_denied_after_its_fraud_review_was_never_taken() -> None:
    denied = document(
        "cancel", fraud_status="deny", payment_type="credit_card", approval_code="1733300000000"
    )
    assert read_status(ORDER, denied).state == ChargeState.FAILED


@pytest.mark.parametrize(("fraud", "in_review"), [("challenge", True), ("accept", False)])
def test_only_a_capture_held_for_a_fraud_review_is_under_review(
    fraud: str, in_review: bool
) -> None:
    card = document("capture", fraud_status=fraud, payment_type="credit_card")
    assert read_status(ORDER, card).in_review is in_review
    assert read_status(ORDER, document("pending")).in_review is False


def test_a_settlement_keeps_its_settlement_time_read_in_jakarta() -> None:
    payment = read_status(ORDER, document("settlement", settlement_time="2026-12-04 10:16:40"))
    assert payment.settled_at == datetime(2026, 12, 4, 3, 16, 40, tzinfo=UTC)


def test_partial_refunds_are_paid_with_each_refund_listed_by_its_id() -> None:
    refunds = [
        {
            "refund_chargeback_id": 4211,
            "refund_amount": "50000.00",
            "created_at": "2026-12-04 11:00:00",
            "reason": "one item out of stock",
            "refund_key": "refund-a",
        },
        {
            "refund_chargeback_id": 4212,
            "refund_amount": "28000.00",
            "created_at": "2026-12-04 12:00:00",
            "reason": "damaged in transit",
            "refund_key": "refund-b",
        },
    ]
    payment = read_status(
        ORDER, document("partial_refund", refund_amount="78000.00", refunds=refunds)
    )
    assert payment.state == ChargeState.PAID
    assert [(r.kind, r.reference, r.amount) for r in payment.reversals] == [
        (ReversalKind.REFUND, "4211", 50000),
        (ReversalKind.REFUND, "4212", 28000),
    ]
    assert payment.reversed_amount == 78000
    assert payment.reversals[0].at == datetime(2026, 12, 4, 4, 0, tzinfo=UTC)


def test_a_chargeback_the_document_does_not_itemise_is_one_chargeback_of_what_is_left() -> None:
    payment = read_status(ORDER, document("chargeback"))
    assert payment.state == ChargeState.PAID
    [chargeback] = payment.reversals
    assert (chargeback.kind, chargeback.amount) == (ReversalKind.CHARGEBACK, 178000)


@pytest.mark.parametrize(
    "broken",
    [
        {"transaction_status": None},
        {"transaction_status": "settled_maybe"},
        {"gross_amount": "178000.50"},
        {"gross_amount": "a lot"},
    ],
)
def test_a_document_that_cannot_be_read_is_the_gateway_unavailable(
    broken: dict[str, Any],
) -> None:
    body = {key: value for key, value in document("settlement", **broken).items() if value}
    with pytest.raises(GatewayUnavailable):
        read_status(ORDER, body)


def test_a_refund_entry_with_an_unreadable_amount_is_the_gateway_unavailable() -> None:
    refunds = [{"refund_chargeback_id": 1, "refund_amount": "12.5", "refund_key": "k"}]
    with pytest.raises(GatewayUnavailable):
        read_status(ORDER, document("partial_refund", refunds=refunds))


@given(rupiah=st.integers(min_value=0, max_value=10**12))
def test_gross_amount_reads_as_whole_rupiah(rupiah: int) -> None:
    assert read_status(ORDER, document("settlement", gross_amount=f"{rupiah}.00")).amount == rupiah


def test_a_chargeback_read_at_partial_then_full_is_one_chargeback_by_one_reference() -> None:
    order_id = uuid.uuid4()
    base = {
        "transaction_id": "tx-cb",
        "gross_amount": "100000.00",
        "currency": "IDR",
        "status_code": "200",
    }
    partial = read_status(order_id, {**base, "transaction_status": "partial_chargeback"})
    full = read_status(order_id, {**base, "transaction_status": "chargeback"})
    assert [r.reference for r in partial.reversals] == [r.reference for r in full.reversals]
