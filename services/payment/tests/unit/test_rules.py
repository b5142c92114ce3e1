"""The payment rules, pure: the shop's signature (rotation, tolerance, tampering), Midtrans'
signature and statuses, and what a notification does to a payment. Signatures are made by
the development payment gateway, from the formats' definitions, never by the verifiers."""

from __future__ import annotations

import pytest

from shop.payment.domain import midtrans, shop_format
from shop.payment.domain.errors import InvalidNotification, InvalidSignature
from shop.payment.domain.notifications import Meaning
from shop.simulators.gateway import midtrans_signature_key, shop_signature

BODY = b'{"event_id": "evt_1"}'
NOW = 1_796_287_800


def test_a_signature_by_any_active_secret_verifies() -> None:
    header = shop_signature(BODY, "old", NOW)

    shop_format.verify(header, BODY, ["new", "old"], now=NOW + 10, tolerance=300)


@pytest.mark.parametrize(
    ("header", "body", "now", "reason"),
    [
        (shop_signature(BODY, "other", NOW), BODY, NOW, "does not match"),
        (shop_signature(BODY, "new", NOW), BODY + b" ", NOW, "does not match"),
        (shop_signature(BODY, "new", NOW), BODY, NOW + 301, "more than the 300 s allowed"),
        (shop_signature(BODY, "new", NOW), BODY, NOW - 301, "more than the 300 s allowed"),
        (f"t={NOW},t={NOW},v1=00", BODY, NOW, "needs one t="),
        ("t=soon,v1=00", BODY, NOW, "needs one t="),
        ("", BODY, NOW, "missing"),
        ("t=²,v1=00", BODY, NOW, "needs one t="),
        (f"t={NOW},v1=é", BODY, NOW, "does not match"),
    ],
)
def test_anything_else_is_refused_saying_why(
    header: str, body: bytes, now: int, reason: str
) -> None:
    with pytest.raises(InvalidSignature, match=reason):
        shop_format.verify(header, body, ["new"], now=now, tolerance=300)


def test_one_of_several_signatures_in_the_header_may_match() -> None:
    good = shop_signature(BODY, "new", NOW).split(",")[1]

    shop_format.verify(f"t={NOW},v1={'0' * 64},{good}", BODY, ["new"], now=NOW, tolerance=300)


def test_the_midtrans_signature_key_is_sha512_of_its_four_parts() -> None:
    # sha512("ORDER-1" "200" "250000.00" "key"), as Midtrans documents the formula and a
    # gateway of its own computes it.
    key = midtrans_signature_key("ORDER-1", "200", "250000.00", "key")

    midtrans.verify(
        key.upper(),
        order_id="ORDER-1",
        status_code="200",
        gross_amount="250000.00",
        server_key="key",
    )
    with pytest.raises(InvalidSignature):
        midtrans.verify(
            key, order_id="ORDER-1", status_code="200", gross_amount="250001.00", server_key="key"
        )


@pytest.mark.parametrize(
    ("status", "fraud", "meaning"),
    [
        ("capture", "accept", Meaning.PAID),
        ("capture", "challenge", Meaning.PENDING),
        ("capture", "deny", Meaning.FAILED),
        ("settlement", None, Meaning.PAID),
        ("pending", None, Meaning.PENDING),
        ("deny", None, Meaning.FAILED),
        ("cancel", None, Meaning.FAILED),
        ("expire", None, Meaning.FAILED),
        ("failure", None, Meaning.FAILED),
        ("refund", None, Meaning.REFUNDED),
        ("partial_refund", None, Meaning.REFUNDED),
        ("authorize", None, Meaning.PENDING),
        ("chargeback", None, Meaning.CHARGED_BACK),
        ("partial_chargeback", None, Meaning.CHARGED_BACK),
    ],
)
def test_midtrans_statuses_mean_what_midtrans_documents(
    status: str, fraud: str | None, meaning: Meaning
) -> None:
    code = {Meaning.PAID: "200", Meaning.PENDING: "201"}.get(meaning, "202")
    assert midtrans.meaning(status, fraud, code) == meaning


@pytest.mark.parametrize("code", ["201", "202"])
def test_a_settlement_without_midtrans_success_code_is_refused(code: str) -> None:
    with pytest.raises(InvalidNotification, match="status_code"):
        midtrans.meaning("settlement", None, code)


@pytest.mark.parametrize("amount", ["250000.50", "-1.00", "NaN", "lots", "Infinity"])
def test_a_gross_amount_that_is_not_whole_rupiah_is_refused(amount: str) -> None:
    with pytest.raises(InvalidNotification):
        midtrans.whole_rupiah(amount)


def test_a_gross_amount_in_midtrans_form_is_whole_rupiah() -> None:
    assert midtrans.whole_rupiah("250000.00") == 250000
