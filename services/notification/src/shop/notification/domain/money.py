"""How amounts and moments read to a customer of a shop in Indonesia: Rupiah with dots
between thousands, and times on the Jakarta clock (WIB) with English month names."""

from __future__ import annotations

from datetime import datetime
from zoneinfo import ZoneInfo

from shop.notification.domain.errors import UnstatableOrder

CURRENCY = "IDR"
"""The only currency the shop sells in; amounts are whole Rupiah (IDR has no minor unit)."""

JAKARTA = ZoneInfo("Asia/Jakarta")

# Spelled out rather than taken from strftime("%B"), whose words follow the process locale:
# a server started with an Indonesian locale would otherwise write "Desember".
_MONTHS = (
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
)


def rupiah(amount: int) -> str:
    """``250000`` -> ``"Rp 250.000"``: Indonesian usage puts dots between thousands."""
    if amount < 0:
        # The contracts guarantee amounts of zero or more; a negative one is a bug upstream,
        # and printing it on a receipt would only hide it.
        raise UnstatableOrder(f"an amount cannot be negative, got {amount}")
    return "Rp " + f"{amount:,}".replace(",", ".")


def require_rupiah(currency: str) -> None:
    """Refuse an amount in any other currency than IDR, rather than print it as Rupiah."""
    if currency != CURRENCY:
        raise UnstatableOrder(f"amounts are formatted as Rupiah only, got currency {currency!r}")


def wib(moment: datetime) -> str:
    """An aware moment on the Jakarta clock, e.g. ``"2 December 2026, 16:30 WIB"``."""
    if moment.tzinfo is None or moment.utcoffset() is None:
        # A naive time could be UTC or local; guessing would put a wrong hour on a receipt.
        raise UnstatableOrder("the moment must carry its time zone")
    local = moment.astimezone(JAKARTA)
    month = _MONTHS[local.month - 1]
    return f"{local.day} {month} {local.year}, {local:%H:%M} WIB"
