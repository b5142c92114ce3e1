"""What the shop's e-mails refuse to state: an order they would misstate."""

from __future__ import annotations


class UnstatableOrder(ValueError):
    """The event says something the e-mails and invoices cannot print truthfully (another
    currency than Rupiah, a negative amount, a time without its zone). Rendering it again
    would fail the same way."""
