"""Properties of the shop's signed webhook format over generated headers, bodies, secrets
and clocks. Notifications are signed by the development payment gateway
(:mod:`shop.simulators.gateway`), which signs from the format's definition and not with
this service's code: a verifier that drifts from the definition fails here."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from shop.payment.domain import shop_format
from shop.payment.domain.errors import InvalidSignature
from shop.simulators.gateway import shop_signature

TOLERANCE = 300
NOW = 1_796_287_800

bodies = st.binary(max_size=512)
secrets = st.text(min_size=1, max_size=64)
# A header as the server reads it: any bytes, decoded as Latin-1 (what HTTP carries).
raw_headers = st.binary(max_size=200).map(lambda raw: raw.decode("latin-1"))
# Headers that look like the format, to get past the first checks: t= and v1= parts in any
# number and order, with digits, hex or anything else in them.
# Digits as str.isdigit() has them: of other scripts ("٣"), superscript ("²"), circled
# ("①"); int() takes some of them, and refuses the others.
numbers = st.text(
    st.characters(categories=["Nd", "No"]).filter(str.isdigit), min_size=1, max_size=12
)
parts = st.one_of(
    st.from_regex(r"t=[0-9]{0,14}", fullmatch=True),
    numbers.map("t={}".format),
    st.from_regex(r"v1=[0-9a-f]{0,70}", fullmatch=True),
    st.builds("{}={}".format, st.sampled_from(["t", "v1", "v0", " t", "T"]), st.text(max_size=20)),
    st.text(max_size=20),
)
shaped_headers = st.lists(parts, max_size=5).map(",".join)
headers = st.one_of(st.none(), raw_headers, shaped_headers, st.text(max_size=200))
times = st.integers(min_value=0, max_value=10**12)


def verified_or_refused(header: str | None, body: bytes, secrets: list[str], now: float) -> bool:
    """True if verified; False if refused as an InvalidSignature (anything else raises)."""
    try:
        shop_format.verify(header, body, secrets, now=now, tolerance=TOLERANCE)
    except InvalidSignature:
        return False
    return True


@given(headers, bodies, st.lists(secrets, min_size=1, max_size=3), times)
def test_any_header_and_body_are_verified_or_refused_as_an_invalid_signature(
    header: str | None, body: bytes, keys: list[str], now: int
) -> None:
    verified_or_refused(header, body, keys, now)


@given(st.one_of(numbers, st.from_regex(r"[0-9]{13,40}", fullmatch=True)), bodies, secrets)
def test_a_time_not_of_ascii_digits_or_too_long_is_refused_as_malformed(
    time: str, body: bytes, secret: str
) -> None:
    signature = shop_signature(body, secret, NOW).split(",")[1]

    with pytest.raises(InvalidSignature, match=r"needs one t=<unix seconds>|more than the"):
        shop_format.verify(f"t={time},{signature}", body, [secret], now=NOW, tolerance=TOLERANCE)


@given(bodies, secrets, st.integers(min_value=-TOLERANCE, max_value=TOLERANCE))
def test_a_body_signed_by_the_gateway_within_the_tolerance_verifies(
    body: bytes, secret: str, skew: int
) -> None:
    header = shop_signature(body, secret, NOW + skew)

    assert verified_or_refused(header, body, [secret], NOW)


@given(bodies, secrets, st.integers(min_value=TOLERANCE + 1, max_value=10**9), st.booleans())
def test_a_signature_from_outside_the_tolerance_is_refused_however_well_signed(
    body: bytes, secret: str, skew: int, ahead: bool
) -> None:
    at = NOW + skew if ahead else max(0, NOW - skew)
    header = shop_signature(body, secret, at)

    with pytest.raises(InvalidSignature, match="more than the 300 s allowed"):
        shop_format.verify(header, body, [secret], now=NOW, tolerance=TOLERANCE)


@given(bodies.filter(bool), secrets, st.data())
def test_changing_any_byte_of_the_body_is_refused(
    body: bytes, secret: str, data: st.DataObject
) -> None:
    header = shop_signature(body, secret, NOW)
    at = data.draw(st.integers(min_value=0, max_value=len(body) - 1), label="at")
    byte = data.draw(st.integers(0, 255).filter(lambda b: b != body[at]), label="byte")
    changed = body[:at] + bytes([byte]) + body[at + 1 :]

    assert not verified_or_refused(header, changed, [secret], NOW)


@given(bodies, secrets, st.data())
def test_changing_any_character_of_the_signature_header_is_refused(
    body: bytes, secret: str, data: st.DataObject
) -> None:
    """The time and the signature alike: the time is part of what is signed."""
    header = shop_signature(body, secret, NOW)
    at = data.draw(st.integers(min_value=0, max_value=len(header) - 1), label="at")
    character = data.draw(
        st.characters(codec="latin-1").filter(lambda c: c != header[at]), label="character"
    )
    changed = header[:at] + character + header[at + 1 :]

    assert not verified_or_refused(changed, body, [secret], NOW)


@given(bodies, st.lists(secrets, min_size=1, max_size=4, unique=True), st.data())
def test_a_body_signed_with_any_secret_in_the_rotation_verifies_and_no_other(
    body: bytes, rotation: list[str], data: st.DataObject
) -> None:
    signer = data.draw(st.sampled_from(rotation), label="signer")
    stranger = data.draw(secrets.filter(lambda s: s not in rotation), label="stranger")

    assert verified_or_refused(shop_signature(body, signer, NOW), body, rotation, NOW)
    assert not verified_or_refused(shop_signature(body, stranger, NOW), body, rotation, NOW)


@given(bodies, secrets, st.lists(st.from_regex(r"[0-9a-f]{64}", fullmatch=True), max_size=3))
def test_one_right_signature_among_wrong_ones_verifies(
    body: bytes, secret: str, wrong: list[str]
) -> None:
    """Several v1= may be sent (a gateway rotating its secret signs with both)."""
    header = shop_signature(body, secret, NOW)
    timestamp, right = header.split(",")
    header = ",".join([timestamp, *(f"v1={w}" for w in wrong), right])

    assert verified_or_refused(header, body, [secret], NOW)
