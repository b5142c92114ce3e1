"""Money is an integer count of the currency's minor unit; IDR has none (250000 is Rp 250.000)."""

from __future__ import annotations

from collections.abc import Iterable

CURRENCY = "IDR"
MAX_LINE_QUANTITY = 100
"""More of one product in one order than any household needs: refused as a likely mistake."""


def line_total(quantity: int, unit_price: int) -> int:
    if quantity < 1 or unit_price < 0:
        raise ValueError("a line needs a positive quantity and a non-negative price")
    return quantity * unit_price


def order_total(lines: Iterable[tuple[int, int]]) -> int:
    """Sum of ``quantity * unit_price`` over ``(quantity, unit_price)`` pairs."""
    return sum(line_total(quantity, price) for quantity, price in lines)
