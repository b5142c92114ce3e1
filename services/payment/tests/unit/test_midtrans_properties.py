"""Properties of Midtrans' notifications over generated fields: the signature_key verifies
exactly when Midtrans' definition signs those fields, whatever is sent otherwise is refused
as the domain's error, and an amount reads as whole Rupiah or not at all. Signatures come
from the development payment gateway (:mod:`shop.simulators.gateway`), written from
Midtrans' definition and not with this service's code."""

from __future__ import annotations

from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from shop.payment.domain import midtrans
from shop.payment.domain.errors import InvalidNotification, InvalidSignature
from shop.payment.domain.notifications import MAX_AMOUNT, Meaning
from shop.simulators.gateway import midtrans_signature_key

# Text as a JSON body brings it (no lone surrogates: the JSON parser refuses them).
fields = st.text(max_size=60)
status_codes = st.from_regex(r"[0-9]{3}", fullmatch=True)
server_keys = st.text(min_size=1, max_size=60)
STATUSES = [
    "settlement",
    "capture",
    "pending",
    "deny",
    "cancel",
    "expire",
    "failure",
    "refund",
    "partial_refund",
    "chargeback",
    "partial_chargeback",
    "authorize",
]
"""Every transaction status Midtrans documents, reversals and card authorisations included
(the same list as the webhook's schema test, test_api_schemathesis.MIDTRANS_STATUSES)."""
transaction_statuses = st.sampled_from(STATUSES) | st.text(max_size=20)
fraud_statuses = st.none() | st.sampled_from(["accept", "challenge", "deny"]) | st.text(max_size=10)


def verified(signature: str, order_id: str, code: str, amount: str, key: str) -> bool:
    """True if verified; False if refused as an InvalidSignature (anything else raises)."""
    try:
        midtrans.verify(
            signature, order_id=order_id, status_code=code, gross_amount=amount, server_key=key
        )
    except InvalidSignature:
        return False
    return True


@given(fields, fields, status_codes, fields, server_keys)
def test_any_signature_key_is_verified_or_refused_as_an_invalid_signature(
    signature: str, order_id: str, code: str, amount: str, key: str
) -> None:
    verified(signature, order_id, code, amount, key)


@given(fields, status_codes, fields, server_keys, st.booleans())
def test_a_notification_signed_as_midtrans_signs_verifies_in_either_case(
    order_id: str, code: str, amount: str, key: str, upper: bool
) -> None:
    signature = midtrans_signature_key(order_id, code, amount, key)
    signature = signature.upper() if upper else signature

    assert verified(signature, order_id, code, amount, key)


@given(fields, status_codes, fields, server_keys, st.data())
def test_changing_any_character_of_a_signed_field_or_the_signature_is_refused(
    order_id: str, code: str, amount: str, key: str, data: st.DataObject
) -> None:
    sent = {
        "signature": midtrans_signature_key(order_id, code, amount, key),
        "order_id": order_id,
        "code": code,
        "amount": amount,
    }
    name = data.draw(st.sampled_from([name for name, value in sent.items() if value]))
    value = sent[name]
    at = data.draw(st.integers(min_value=0, max_value=len(value) - 1), label="at")
    # Another character, and for the hex signature not the same one in the other case.
    character = data.draw(
        st.characters(codec="utf-8").filter(lambda c: c.lower() != value[at].lower()),
        label="character",
    )
    changed = {**sent, name: value[:at] + character + value[at + 1 :]}

    assert not verified(
        changed["signature"], changed["order_id"], changed["code"], changed["amount"], key
    )


@given(fields, status_codes, fields, server_keys, server_keys)
def test_a_notification_signed_with_another_server_key_is_refused(
    order_id: str, code: str, amount: str, key: str, other: str
) -> None:
    signature = midtrans_signature_key(order_id, code, amount, other)

    assert verified(signature, order_id, code, amount, key) == (other == key)


@given(st.text(max_size=40))
def test_any_gross_amount_reads_as_whole_rupiah_or_is_refused_as_not_understood(
    gross_amount: str,
) -> None:
    try:
        amount = midtrans.whole_rupiah(gross_amount)
    except InvalidNotification:
        return
    assert 0 <= amount <= MAX_AMOUNT
    assert Decimal(gross_amount) == amount


@given(
    st.integers(min_value=0, max_value=MAX_AMOUNT),
    st.sampled_from(["", ".0", ".00", ".000"]),
)
def test_a_whole_amount_as_midtrans_writes_it_reads_back_as_the_same_integer(
    amount: int, fraction: str
) -> None:
    assert midtrans.whole_rupiah(f"{amount}{fraction}") == amount


@given(
    st.integers(min_value=0, max_value=MAX_AMOUNT),
    st.integers(min_value=1, max_value=99),
)
def test_an_amount_with_a_fraction_of_a_rupiah_is_refused(amount: int, cents: int) -> None:
    with pytest.raises(InvalidNotification, match="not a whole Rupiah amount"):
        midtrans.whole_rupiah(f"{amount}.{cents:02d}")


@given(
    st.one_of(
        st.integers(min_value=MAX_AMOUNT + 1).map(str),
        # Short texts for enormous numbers: refused as fast as any other.
        st.from_regex(
            r"[1-9](\.[0-9]{1,3})?[eE]\+?(1[6-9]|[2-9][0-9]|[1-9][0-9]{2,11})", fullmatch=True
        ),
    )
)
def test_an_amount_beyond_any_payment_is_refused(gross_amount: str) -> None:
    with pytest.raises(InvalidNotification, match="more than"):
        midtrans.whole_rupiah(gross_amount)


@given(transaction_statuses, fraud_statuses, status_codes)
def test_any_status_has_a_meaning_or_is_refused_and_paid_needs_midtrans_success_code(
    transaction_status: str, fraud_status: str | None, code: str
) -> None:
    """The signature covers status_code but not the status: a signed pending (201) or denial
    (202) must not become a payment by editing its status."""
    try:
        meaning = midtrans.meaning(transaction_status, fraud_status, code)
    except InvalidNotification:
        return
    if meaning == Meaning.PAID:
        assert code == midtrans.PAID_STATUS_CODE
        assert transaction_status == "settlement" or (
            transaction_status == "capture" and fraud_status == "accept"
        )
    else:
        assert transaction_status in STATUSES
