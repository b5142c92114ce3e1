"""The invoice PDF, read back with a PDF parser as a customer's viewer would."""

from __future__ import annotations

import io
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import pytest
from fpdf import FPDF
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
POINTS_PER_MM = 72 / 25.4
MARGIN = 18.0  # mm
COLUMNS = {"Product": (18.0, 84.0), "SKU": (84.0, 120.0)}  # mm from the page's left edge


def paid_order(**changes: Any) -> OrderPaid:
    """The contracts' example payment, changed and validated again."""
    return OrderPaid.model_validate({**examples()[OrderPaid].model_dump(), **changes})


def read(data: bytes) -> PdfReader:
    return PdfReader(io.BytesIO(data))


def text_of(data: bytes) -> str:
    return "\n".join(page.extract_text() for page in read(data).pages)


@dataclass(frozen=True)
class Placed:
    """A text as drawn: on which page (from 1), where its baseline starts (mm from the top
    left corner of the page), and how wide it is."""

    page: int
    x: float
    y: float
    text: str
    width: float


def placed(data: bytes) -> list[Placed]:
    widths = FPDF(unit="mm")
    found: list[Placed] = []
    for number, page in enumerate(read(data).pages, start=1):
        drawn = _Drawn()
        page.extract_text(visitor_text=drawn)
        height = float(page.mediabox.height)
        for text, _, matrix, font, size in drawn:
            if not text.strip():
                continue
            bold = "Bold" in str((font or {}).get("/BaseFont", ""))
            widths.set_font("Helvetica", "B" if bold else "", matrix[0] * size)
            found.append(
                Placed(
                    page=number,
                    x=matrix[4] / POINTS_PER_MM,
                    y=(height - matrix[5]) / POINTS_PER_MM,
                    text=text.strip(),
                    width=widths.get_string_width(text.strip()),
                )
            )
    return found


class _Drawn(list[tuple[Any, ...]]):
    """pypdf's ``visitor_text``: what it is told of each text, in order (the text, the
    current and the text matrix, the font dictionary, the font size)."""

    def __call__(self, *told: Any) -> None:
        self.append(told)


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


LONG_NAME = (
    "Exfoliating Toner with 7% Glycolic Acid, 2% Salicylic Acid and Centella Asiatica "
    "Extract 150 ml"
)


def test_a_long_product_name_wraps_within_its_column_beside_the_rest_of_its_row() -> None:
    line = {"sku": "TONER-AHA-BHA-150", "name": LONG_NAME, "quantity": 3, "unit_price": 139000}
    data = render_invoice(paid_order(lines=[line], total=3 * 139000), SHOP)
    left, right = COLUMNS["Product"]
    name_lines = [t for t in placed(data) if t.text in LONG_NAME and left <= t.x < right]
    assert " ".join(t.text for t in name_lines) == LONG_NAME
    assert len(name_lines) == 3
    assert all(t.x + t.width <= right for t in name_lines)
    # The row's other cells are centred on its height: beside the name's middle line.
    [sku] = [t for t in placed(data) if t.text == "TONER-AHA-BHA-150"]
    assert sku.y == pytest.approx(name_lines[1].y)
    assert COLUMNS["SKU"][0] <= sku.x
    [amount] = [t for t in placed(data) if t.text == "Rp 417.000" and t.y == sku.y]
    assert amount.x + amount.width == pytest.approx(210 - MARGIN - 1.5, abs=0.01)


def test_a_wrapped_product_name_keeps_its_dashes_and_curly_quotes() -> None:
    # Windows-1252 has them, so the font draws them, on a line of its own as on one line.
    name = LONG_NAME.replace(" and ", " \u2013 ").replace("Centella", "\u201cCentella\u201d")
    line = {"sku": "TONER-AHA-BHA-150", "name": name, "quantity": 1, "unit_price": 139000}
    text = text_of(render_invoice(paid_order(lines=[line], total=139000), SHOP))
    assert "\u2013" in text
    assert "\u201cCentella\u201d" in text
    assert "?" not in text


def test_a_long_order_repeats_the_headings_and_keeps_each_row_on_one_page() -> None:
    lines = [
        {
            "sku": f"MASK-{i:02d}",
            "name": LONG_NAME if i % 10 == 0 else f"Sheet Mask no. {i}",
            "quantity": 1,
            "unit_price": 25000,
        }
        for i in range(1, 41)
    ]
    data = render_invoice(paid_order(lines=lines, total=40 * 25000), SHOP)
    texts = placed(data)
    pages = len(read(data).pages)
    assert pages >= 2
    pages_with_rows = {t.page for t in texts if t.text.startswith("MASK-")}
    assert len(pages_with_rows) >= 2
    for page in range(1, pages + 1):
        headings = [t for t in texts if t.page == page and t.text == "Unit price"]
        skus = [t for t in texts if t.page == page and t.text.startswith("MASK-")]
        if page in pages_with_rows:
            [heading] = headings
            assert all(heading.y < sku.y for sku in skus)
        else:  # the total and the payment, after the table
            assert headings == []
        assert [t.text for t in texts if t.page == page and t.text.startswith("Page ")] == [
            f"Page {page} of {pages}"
        ]
        continued = [t for t in texts if t.page == page and t.text.endswith("(continued)")]
        assert [t.text for t in continued] == (
            [] if page == 1 else ["Glow Lab - Invoice INV-SK-7KQ4-M2XD (continued)"]
        )
    skus = [t for t in texts if t.text.startswith("MASK-")]
    assert [t.text for t in skus] == [f"MASK-{i:02d}" for i in range(1, 41)]
    for sku in skus:
        # A row is never split: its amount is on its SKU's page and line.
        assert [t for t in texts if t.text == "Rp 25.000" and (t.page, t.y) == (sku.page, sku.y)]


def test_line_breaks_soft_hyphens_and_no_break_spaces_in_a_name_print_as_before() -> None:
    lines = [
        {
            "sku": "SERUM-HA-30",
            "name": "Hyalu\u00adronic Serum 30\u00a0ml",
            "quantity": 1,
            "unit_price": 99000,
        },
        {"sku": "SET-DUO", "name": "Duo set:\nserum and toner", "quantity": 1, "unit_price": 1000},
    ]
    data = render_invoice(paid_order(lines=lines, total=100000), SHOP)
    texts = [t.text for t in placed(data)]
    # The soft hyphen only shows where a line breaks at it; the no-break space is a space.
    assert "Hyaluronic Serum 30 ml" in texts
    assert [t for t in texts if t in {"Duo set:", "serum and toner"}] == [
        "Duo set:",
        "serum and toner",
    ]


def test_a_long_address_and_payment_reference_wrap_within_the_page() -> None:
    email = "ayu.kartika.wulandari.putri@a-rather-long-mail-provider.example.co.id"
    reference = "PAY-" + "-".join(f"{i:04d}" for i in range(30))
    data = render_invoice(paid_order(customer_email=email, payment_reference=reference), SHOP)
    texts = placed(data)
    assert "".join(t.text for t in texts if t.x < 100 and t.text in email) == email
    assert all(t.x + t.width <= 18 + 80 for t in texts if t.text in email)
    assert all(t.x + t.width <= 210 - MARGIN for t in texts)
    assert reference in text_of(data).replace("\n", "")
