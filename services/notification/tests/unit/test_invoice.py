"""The invoice PDF, read back with a PDF parser as a customer's viewer would."""

from __future__ import annotations

import io
from datetime import UTC, datetime
from typing import Any

import pytest
from pypdf import PdfReader

from shop.contracts import OrderPaid
from shop.contracts.examples import examples
from shop.notification.domain.invoice import invoice_number, render_invoice
from shop.notification.domain.rendering import ShopIdentity

SHOP = ShopIdentity(
    name="Glow Lab",
    address="Jl. Kemang Raya 12, Jakarta Selatan 12730",
    support_email="help@glowlab.example",
    website="https://glowlab.example",
)
A4_IN_POINTS = (595.28, 841.89)


def paid_order(**changes: Any) -> OrderPaid:
    """The contracts' example payment, changed and validated again."""
    return OrderPaid.model_validate({**examples()[OrderPaid].model_dump(), **changes})


def read(data: bytes) -> PdfReader:
    return PdfReader(io.BytesIO(data))


def text_of(data: bytes) -> str:
    return "\n".join(page.extract_text() for page in read(data).pages)


def test_the_invoice_is_a_one_page_a4_pdf() -> None:
    data = render_invoice(paid_order(), SHOP)
    assert data.startswith(b"%PDF")
    pages = read(data).pages
    assert len(pages) == 1
    size = (float(pages[0].mediabox.width), float(pages[0].mediabox.height))
    assert size == pytest.approx(A4_IN_POINTS, abs=0.5)


def test_the_invoice_shows_who_what_and_how_it_was_paid() -> None:
    text = text_of(render_invoice(paid_order(), SHOP))
    for expected in (
        "Glow Lab",
        "Jl. Kemang Raya 12, Jakarta Selatan 12730",
        "Invoice",
        "INV-SK-7KQ4-M2XD",
        "SK-7KQ4-M2XD",
        "2 December 2026, 16:30 WIB",
        "ayu@example.com",
        "Niacinamide 10% Serum 30 ml",
        "SERUM-NIA-30",
        "Rp 89.000",
        "Rp 178.000",
        "Sunscreen SPF 50 PA++++ 50 ml",
        "Rp 72.000",
        "Rp 250.000",
        "PAY-88231",
        "0b7e9d2c-5a4f-4e3d-8c2b-1a0f9e8d7c6b",
    ):
        assert expected in text, expected


def test_the_invoice_number_is_derived_from_the_order_number() -> None:
    assert invoice_number(paid_order()) == "INV-SK-7KQ4-M2XD"


def test_the_document_is_described_in_its_metadata() -> None:
    metadata = read(render_invoice(paid_order(), SHOP)).metadata
    assert metadata is not None
    assert metadata.title == "Invoice INV-SK-7KQ4-M2XD"
    assert metadata.author == "Glow Lab"
    assert metadata.creator == "Glow Lab"
    assert metadata.creation_date == datetime(2026, 12, 2, 9, 30, tzinfo=UTC)


def test_the_same_event_gives_the_same_bytes() -> None:
    # Two renders within one second would match even with a clock-stamped creation date;
    # the metadata test above pins that date to the payment's, which makes this hold later too.
    assert render_invoice(paid_order(), SHOP) == render_invoice(paid_order(), SHOP)


def test_characters_the_builtin_font_lacks_do_not_stop_the_invoice() -> None:
    en_dash, check_mark, herb = "\u2013", "\u2713", "\U0001f33f"
    name = f"Serum {en_dash} 30 ml {check_mark} {herb}"
    line = {"sku": "SERUM-C-30", "name": name, "quantity": 1, "unit_price": 250000}
    shop = ShopIdentity(
        name=f"Glow Lab {check_mark}",
        address=SHOP.address,
        support_email=SHOP.support_email,
        website=SHOP.website,
    )
    text = text_of(render_invoice(paid_order(lines=[line]), shop))
    # The en dash is in the font's Windows-1252 set and survives; the rest become "?".
    assert f"Serum {en_dash} 30 ml ? ?" in text
    assert "Glow Lab ?" in text


def test_a_long_order_continues_on_further_pages() -> None:
    lines = [
        {"sku": f"MASK-{i:02d}", "name": f"Sheet Mask no. {i}", "quantity": 1, "unit_price": 25000}
        for i in range(1, 41)
    ]
    data = render_invoice(paid_order(lines=lines, total=40 * 25000), SHOP)
    pages = read(data).pages
    assert len(pages) >= 2
    last_page = pages[-1].extract_text()
    assert "Sheet Mask no. 40" in last_page
    assert "Rp 1.000.000" in last_page
    assert "PAY-88231" in last_page
    text = text_of(data)
    assert all(f"MASK-{i:02d}" in text for i in range(1, 41))
    # The column headings repeat, so a later page can be read on its own.
    assert all("Unit price" in page.extract_text() for page in pages)


def test_an_order_in_another_currency_is_refused() -> None:
    with pytest.raises(ValueError, match="Rupiah only"):
        render_invoice(paid_order(currency="USD"), SHOP)
