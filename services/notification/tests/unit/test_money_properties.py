"""Properties of how amounts and moments read to the customer, over generated values: a
Rupiah amount reads back as the same integer at any size (never through a float), grouped
by dots in threes; a negative amount, another currency or a time without its zone is
refused as unstatable; a moment reads as the same minute on the Jakarta clock."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta, timezone
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given
from hypothesis import strategies as st

from shop.notification.domain.errors import UnstatableOrder
from shop.notification.domain.money import CURRENCY, require_rupiah, rupiah, wib

RUPIAH = re.compile(r"Rp (0|[1-9][0-9]{0,2}(\.[0-9]{3})*)")
"""Digits in threes after the first group, no leading zero, no fraction (IDR has none)."""
JAKARTA = ZoneInfo("Asia/Jakarta")

# Past 2**53 a float cannot hold every integer: an amount that went through one would read
# back as another.
amounts = st.integers(min_value=0, max_value=10**40)


@given(amounts)
def test_any_amount_reads_back_as_the_same_integer_grouped_in_threes(amount: int) -> None:
    written = rupiah(amount)

    assert RUPIAH.fullmatch(written), written
    assert int(written.removeprefix("Rp ").replace(".", "")) == amount


@given(amounts, amounts)
def test_a_larger_amount_never_reads_shorter(smaller: int, larger: int) -> None:
    smaller, larger = sorted((smaller, larger))

    assert len(rupiah(smaller)) <= len(rupiah(larger))


@given(st.integers(max_value=-1))
def test_a_negative_amount_is_refused_as_unstatable(amount: int) -> None:
    with pytest.raises(UnstatableOrder, match="cannot be negative"):
        rupiah(amount)


@given(st.text(max_size=5))
def test_only_rupiah_is_a_currency_an_amount_is_printed_in(currency: str) -> None:
    if currency == CURRENCY:
        require_rupiah(currency)
    else:
        with pytest.raises(UnstatableOrder, match="Rupiah only"):
            require_rupiah(currency)


offsets = st.integers(min_value=-(24 * 60 - 1), max_value=24 * 60 - 1).map(
    lambda minutes: timezone(timedelta(minutes=minutes))
)
# Years a receipt is printed in; near year 1 or 9999 the Jakarta clock leaves the calendar.
moments = st.datetimes(
    min_value=datetime(1970, 1, 1),
    max_value=datetime(2200, 1, 1),
    timezones=st.sampled_from([UTC, JAKARTA, ZoneInfo("Asia/Jayapura")]) | offsets,
)
WIB = re.compile(
    r"(?P<day>[1-9][0-9]?) (?P<month>[A-Z][a-z]+) (?P<year>[0-9]{4}), "
    r"(?P<hour>[0-2][0-9]):(?P<minute>[0-5][0-9]) WIB"
)
MONTHS = "January February March April May June July August September October November December"


@given(moments)
def test_any_moment_reads_as_the_same_minute_on_the_jakarta_clock(moment: datetime) -> None:
    written = WIB.fullmatch(wib(moment))

    assert written, wib(moment)
    local = moment.astimezone(JAKARTA)
    read = (
        int(written["year"]),
        MONTHS.split().index(written["month"]) + 1,
        int(written["day"]),
        int(written["hour"]),
        int(written["minute"]),
    )
    assert read == (local.year, local.month, local.day, local.hour, local.minute)


@given(st.datetimes())
def test_a_moment_without_its_zone_is_refused_as_unstatable(moment: datetime) -> None:
    with pytest.raises(UnstatableOrder, match="time zone"):
        wib(moment)
