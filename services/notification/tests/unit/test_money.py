"""Rupiah amounts and Jakarta times as the customer reads them."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

from shop.notification.domain.money import require_rupiah, rupiah, wib


@pytest.mark.parametrize(
    ("amount", "expected"),
    [
        (0, "Rp 0"),
        (5, "Rp 5"),
        (999, "Rp 999"),
        (1000, "Rp 1.000"),
        (89000, "Rp 89.000"),
        (250000, "Rp 250.000"),
        (1234567, "Rp 1.234.567"),
        (1_000_000_000, "Rp 1.000.000.000"),
    ],
)
def test_rupiah_puts_dots_between_thousands(amount: int, expected: str) -> None:
    assert rupiah(amount) == expected


@given(st.integers(min_value=0, max_value=10**15))
def test_rupiah_reads_back_as_the_same_amount(amount: int) -> None:
    digits = rupiah(amount).removeprefix("Rp ")
    groups = digits.split(".")
    assert int("".join(groups)) == amount
    assert all(len(group) == 3 for group in groups[1:])
    assert 1 <= len(groups[0]) <= 3


def test_a_negative_amount_is_refused() -> None:
    with pytest.raises(ValueError, match="cannot be negative"):
        rupiah(-1)


def test_wib_shows_the_jakarta_clock() -> None:
    assert wib(datetime(2026, 12, 2, 9, 30, tzinfo=UTC)) == "2 December 2026, 16:30 WIB"


def test_wib_moves_to_the_next_day_when_jakarta_has() -> None:
    assert wib(datetime(2026, 12, 31, 20, 5, tzinfo=UTC)) == "1 January 2027, 03:05 WIB"


def test_wib_converts_from_any_time_zone() -> None:
    papua = timezone(timedelta(hours=9))  # WIT, two hours ahead of Jakarta
    assert wib(datetime(2026, 3, 7, 8, 0, tzinfo=papua)) == "7 March 2026, 06:00 WIB"


def test_a_moment_without_a_time_zone_is_refused() -> None:
    with pytest.raises(ValueError, match="time zone"):
        wib(datetime(2026, 12, 2, 9, 30))  # naive on purpose


def test_only_rupiah_is_accepted_as_a_currency() -> None:
    require_rupiah("IDR")
    with pytest.raises(ValueError, match="'USD'"):
        require_rupiah("USD")
