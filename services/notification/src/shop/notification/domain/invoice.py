"""The invoice of a paid order as an A4 PDF, attached to the payment receipt.

Drawn with fpdf2's built-in Helvetica, so the service ships no font files; the price of that is
a single-byte character set, see :meth:`_InvoicePdf.normalize_text`.

Every receipt renders one, so its CPU counts: text is drawn with ``cell``, and ``multi_cell``
(which measures a text character by character, at about six times a cell's price) is left to
the texts that do not fit on one line. The table of order lines is laid out and drawn here, as
fpdf2's ``table()`` would draw it (which lays every cell out with ``multi_cell``, twice), each
cell's lines measured once and placed with ``text``.
"""

from __future__ import annotations

import io
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from fpdf import FPDF
from fpdf.enums import Align, MethodReturnValue, XPos, YPos
from fpdf.util import Padding

from shop.contracts import OrderPaid
from shop.contracts.orders import OrderLine
from shop.notification.domain.money import require_rupiah, rupiah, wib
from shop.notification.domain.rendering import ShopIdentity

# The core fonts are declared with WinAnsiEncoding in the PDF, which is Windows-1252: using it
# rather than fpdf2's default latin-1 keeps the dashes and curly quotes of product names.
_CORE_FONT_ENCODING = "cp1252"

_MARGIN = 18.0  # mm
_INK = (46, 42, 39)
_MUTED = (122, 113, 106)
_ACCENT = (138, 90, 68)
_RULE = (232, 224, 216)
_HEADINGS_FILL = (245, 241, 237)

_COLUMNS = ("Product", "SKU", "Qty", "Unit price", "Amount")
_COLUMN_WIDTHS = (66.0, 36.0, 12.0, 30.0, 30.0)  # mm, adding up to the width between the margins
_COLUMN_ALIGNMENT = (Align.L, Align.L, Align.R, Align.R, Align.R)
_TABLE_LINE_HEIGHT = 5.0  # mm
_CELL_PADDING_Y = 2.0  # mm, above and below a table cell's text
_CELL_PADDING_X = 1.5  # mm, either side of it
_BASELINE_BELOW_MIDDLE = 0.3
"""Where fpdf2's cell() puts a line's baseline: this many font sizes below the line's middle."""

_LINE_HEIGHT = 5.0  # mm, of the text outside the table

_NOT_ONE_LINE: Final = re.compile("[\n\r\f\u00ad\u00a0]")
"""Characters ``multi_cell`` gives a meaning of its own (line breaks, a soft hyphen it drops
unless a line breaks there, a no-break space it writes as a space), which ``cell`` would
print as they are: a text with one is always laid out by ``multi_cell``."""


def invoice_number(event: OrderPaid) -> str:
    """One invoice per paid order, so its number is derived, and needs no counter to keep."""
    return f"INV-{event.order_number}"


class InvoiceRenderer:
    """The invoices of one shop."""

    def __init__(self, shop: ShopIdentity) -> None:
        self.shop = shop

    def render(self, event: OrderPaid) -> bytes:
        return render_invoice(event, self.shop)


def render_invoice(event: OrderPaid, shop: ShopIdentity) -> bytes:
    """The invoice of ``event`` as PDF bytes; the same event always gives the same bytes."""
    require_rupiah(event.currency)
    pdf = _InvoicePdf(shop, invoice_number(event))
    _describe_document(pdf, event, shop)
    pdf.add_page()
    _draw_letterhead(pdf, shop)
    _draw_invoice_facts(pdf, event)
    _draw_lines(pdf, event.lines)
    _draw_total(pdf, event.total)
    _draw_payment(pdf, event)
    buffer = io.BytesIO()
    pdf.output(buffer)
    return buffer.getvalue()


class _InvoicePdf(FPDF):
    """An A4 page with the shop's footer and, on continuation pages, the invoice number."""

    def __init__(self, shop: ShopIdentity, number: str) -> None:
        super().__init__(orientation="portrait", unit="mm", format="A4")
        self.core_fonts_encoding = _CORE_FONT_ENCODING
        self.set_margins(_MARGIN, _MARGIN, _MARGIN)
        # Leaves room for the footer, which fpdf2 draws inside the bottom margin.
        self.set_auto_page_break(auto=True, margin=22)
        self._shop = shop
        self._number = number

    def normalize_text(self, text: str) -> str:
        # Every string fpdf2 draws or measures passes through here. The built-in fonts know
        # only Windows-1252's 218 characters, and fpdf2 raises on any other, so a product
        # named with an emoji or a check mark would stop the invoice from being sent at all.
        # A "?" in its place is the lesser harm. Composing first keeps an "e" followed by a
        # combining accent as the "é" the font does have.
        composed = unicodedata.normalize("NFC", text)
        printable = composed.encode(_CORE_FONT_ENCODING, "replace").decode(_CORE_FONT_ENCODING)
        return super().normalize_text(printable)

    def header(self) -> None:
        # The first page has the full letterhead; later ones only say whose pages they are.
        if self.page_no() == 1:
            return
        self.set_font("Helvetica", "", 8)
        self.set_text_color(*_MUTED)
        self.cell(0, 5, f"{self._shop.name} - Invoice {self._number} (continued)")
        self.ln(10)

    def footer(self) -> None:
        self.set_y(-15)
        self.set_draw_color(*_RULE)
        self.line(self.l_margin, self.get_y(), self.w - self.r_margin, self.get_y())
        self.set_font("Helvetica", "", 8)
        self.set_text_color(*_MUTED)
        contact = f"{self._shop.name}  |  {self._shop.support_email}  |  {self._shop.website}"
        self.cell(0, 8, contact, new_x=XPos.LMARGIN)
        # "{nb}" is replaced by fpdf2 with the page count once the document is complete.
        self.cell(0, 8, f"Page {self.page_no()} of {{nb}}", align="R", new_x=XPos.LMARGIN)


def _describe_document(pdf: FPDF, event: OrderPaid, shop: ShopIdentity) -> None:
    pdf.set_title(f"Invoice {invoice_number(event)}")
    pdf.set_subject(f"Order {event.order_number}")
    pdf.set_author(shop.name)
    pdf.set_creator(shop.name)
    pdf.set_lang("en")
    # fpdf2 otherwise stamps the current time, and the same invoice, sent again after a
    # retry, would differ from the first copy in its bytes.
    pdf.set_creation_date(event.paid_at)


def _draw_letterhead(pdf: FPDF, shop: ShopIdentity) -> None:
    top = pdf.get_y()
    pdf.set_font("Helvetica", "B", 20)
    pdf.set_text_color(*_ACCENT)
    pdf.cell(0, 10, shop.name, new_x=XPos.LMARGIN, new_y=YPos.NEXT)
    pdf.set_font("Helvetica", "", 9)
    pdf.set_text_color(*_MUTED)
    pdf.cell(110, 5, shop.address, new_x=XPos.LMARGIN, new_y=YPos.NEXT)
    pdf.cell(110, 5, f"{shop.support_email}  |  {shop.website}", new_x=XPos.LMARGIN)
    # The title sits on the shop's name line, right-aligned, as on a printed letterhead.
    pdf.set_xy(pdf.l_margin, top)
    pdf.set_font("Helvetica", "B", 24)
    pdf.set_text_color(*_INK)
    pdf.cell(0, 10, "Invoice", align="R", new_x=XPos.LMARGIN, new_y=YPos.NEXT)
    pdf.set_y(top + 24)
    _draw_rule(pdf)


def _draw_invoice_facts(pdf: FPDF, event: OrderPaid) -> None:
    top = pdf.get_y() + 6
    # Who was billed on the left, which invoice on the right: the two things a reader looks
    # for first.
    pdf.set_xy(pdf.l_margin, top)
    _draw_label(pdf, "Billed to", width=80)
    pdf.set_font("Helvetica", "", 10)
    pdf.set_text_color(*_INK)
    _draw_text(pdf, 80, event.customer_email)
    left_bottom = pdf.get_y()

    right = pdf.w - pdf.r_margin - 90
    pdf.set_y(top)
    for label, value in (
        ("Invoice number", invoice_number(event)),
        ("Order number", event.order_number),
        ("Date", wib(event.paid_at)),
    ):
        pdf.set_x(right)
        _draw_label(pdf, label, width=30, new_line=False)
        pdf.set_font("Helvetica", "", 10)
        pdf.set_text_color(*_INK)
        _draw_text(pdf, 60, value, align=Align.R)
    pdf.set_y(max(left_bottom, pdf.get_y()) + 8)


@dataclass(frozen=True, slots=True)
class _Line:
    """A line of a table cell, and its width (mm) in the font it was measured in."""

    text: str
    width: float


@dataclass(frozen=True, slots=True)
class _Row:
    """A row of the order table: each cell's text in the lines that fit its column."""

    cells: tuple[tuple[_Line, ...], ...]

    @property
    def height(self) -> float:
        tallest = max(len(lines) for lines in self.cells)
        return tallest * _TABLE_LINE_HEIGHT + 2 * _CELL_PADDING_Y


def _draw_lines(pdf: FPDF, lines: Sequence[OrderLine]) -> None:
    """The order lines under the column headings, a horizontal rule between rows. A long
    order continues on the next page, under the same headings; the headings never stand
    alone at the foot of a page."""
    pdf.set_draw_color(*_RULE)
    pdf.set_font("Helvetica", "B", 9)
    headings = _laid_out(pdf, _COLUMNS)
    pdf.set_font("Helvetica", "", 9)
    pdf.set_text_color(*_INK)
    rows = [
        _laid_out(
            pdf,
            (
                line.name,
                line.sku,
                str(line.quantity),
                rupiah(line.unit_price),
                rupiah(line.quantity * line.unit_price),
            ),
        )
        for line in lines
    ]
    if rows and pdf.will_page_break(headings.height + rows[0].height):
        pdf.add_page()
    _draw_headings(pdf, headings)
    for number, row in enumerate(rows, start=1):
        if pdf.will_page_break(row.height):
            pdf.add_page()
            _draw_headings(pdf, headings)
        _draw_row(pdf, row, rule_below=number < len(rows))


def _laid_out(pdf: FPDF, texts: Sequence[str]) -> _Row:
    """``texts``, one for each column, broken into lines in the current font."""
    return _Row(
        tuple(
            _lines_within(pdf, text, width)
            for text, width in zip(texts, _COLUMN_WIDTHS, strict=True)
        )
    )


def _lines_within(pdf: FPDF, text: str, column_width: float) -> tuple[_Line, ...]:
    """``text`` in the lines a table cell ``column_width`` wide shows it in."""
    width = _one_line_width(pdf, text)
    if width is not None and width <= column_width - 2 * _CELL_PADDING_X:
        return (_Line(text, width),)
    lines = pdf.multi_cell(
        column_width,
        _TABLE_LINE_HEIGHT,
        text,
        padding=Padding(top=0, right=_CELL_PADDING_X, bottom=0, left=_CELL_PADDING_X),
        dry_run=True,
        output=MethodReturnValue.LINES,
    )
    assert isinstance(lines, list)  # what output=LINES returns
    return tuple(_Line(text, pdf.get_string_width(text)) for text in map(_denormalized, lines))


def _denormalized(line: str) -> str:
    """A line ``multi_cell`` laid out, as it was given: it returns its lines in the font's
    bytes (Windows-1252 read as latin-1, an en dash as U+0096), and ``text`` and
    ``get_string_width`` would encode them a second time, each such character a "?"."""
    return line.encode("latin-1").decode(_CORE_FONT_ENCODING)


def _draw_headings(pdf: FPDF, headings: _Row) -> None:
    top = pdf.get_y()
    pdf.set_fill_color(*_HEADINGS_FILL)
    pdf.rect(pdf.l_margin, top, pdf.epw, headings.height, style="F")
    pdf.set_font("Helvetica", "B", 9)
    pdf.set_text_color(*_MUTED)
    _draw_row(pdf, headings, rule_below=True)
    pdf.set_font("Helvetica", "", 9)
    pdf.set_text_color(*_INK)


def _draw_row(pdf: FPDF, row: _Row, *, rule_below: bool) -> None:
    """``row`` at the current position in the current font, each cell's text centred
    vertically in the row's height; the position moves to the start of the next row."""
    top = pdf.get_y()
    height = row.height
    # Each line is placed with text(), at its baseline, where cell() would have put it: the
    # lines are measured already, and cell() would measure them again, at several times
    # text()'s price (a long order's table has hundreds of them).
    baseline = _TABLE_LINE_HEIGHT / 2 + _BASELINE_BELOW_MIDDLE * pdf.font_size
    left = pdf.l_margin
    for lines, width, align in zip(row.cells, _COLUMN_WIDTHS, _COLUMN_ALIGNMENT, strict=True):
        y = top + (height - len(lines) * _TABLE_LINE_HEIGHT) / 2
        for line in lines:
            if align is Align.R:
                x = left + width - _CELL_PADDING_X - line.width
            else:
                x = left + _CELL_PADDING_X
            pdf.text(x, y + baseline, line.text)
            y += _TABLE_LINE_HEIGHT
        left += width
    bottom = top + height
    if rule_below:
        pdf.line(pdf.l_margin, bottom, pdf.l_margin + pdf.epw, bottom)
    pdf.set_xy(pdf.l_margin, bottom)


def _draw_total(pdf: FPDF, total: int) -> None:
    pdf.ln(3)
    label_width = 30.0
    amount_width = 40.0
    pdf.set_x(pdf.w - pdf.r_margin - label_width - amount_width)
    pdf.set_font("Helvetica", "B", 11)
    pdf.set_text_color(*_INK)
    pdf.cell(label_width, 8, "Total", align="R")
    pdf.cell(amount_width, 8, rupiah(total), align="R", new_x=XPos.LMARGIN, new_y=YPos.NEXT)
    pdf.ln(8)


def _draw_payment(pdf: FPDF, event: OrderPaid) -> None:
    _draw_label(pdf, "Payment", width=0)
    pdf.set_font("Helvetica", "", 10)
    pdf.set_text_color(*_INK)
    for line in (
        f"Paid in full on {wib(event.paid_at)}.",
        f"Payment reference: {event.payment_reference}",
        f"Payment ID: {event.payment_id}",
    ):
        _draw_text(pdf, 0, line)
    pdf.ln(6)
    pdf.set_font("Helvetica", "", 9)
    pdf.set_text_color(*_MUTED)
    pdf.cell(0, 5, "Thank you for your order.", new_x=XPos.LMARGIN, new_y=YPos.NEXT)


def _draw_text(pdf: FPDF, width: float, text: str, *, align: Align = Align.L) -> None:
    """``text`` from the current position, in lines ``width`` wide (0: to the right margin)
    that wrap where it does not fit; the position moves to the left margin, below it."""
    room = width or pdf.w - pdf.r_margin - pdf.get_x()
    one_line = _one_line_width(pdf, text)
    if one_line is not None and one_line <= room - 2 * pdf.c_margin:
        pdf.cell(width, _LINE_HEIGHT, text, align=align, new_x=XPos.LMARGIN, new_y=YPos.NEXT)
    else:
        pdf.multi_cell(width, _LINE_HEIGHT, text, align=align, new_x=XPos.LMARGIN, new_y=YPos.NEXT)


def _one_line_width(pdf: FPDF, text: str) -> float | None:
    """The width of ``text`` on one line in the current font, where ``cell`` draws it as
    ``multi_cell`` would; None if it has a character only ``multi_cell`` lays out as it
    should (:data:`_NOT_ONE_LINE`)."""
    if _NOT_ONE_LINE.search(text) is not None:
        return None
    return pdf.get_string_width(text)


def _draw_label(pdf: FPDF, text: str, *, width: float, new_line: bool = True) -> None:
    pdf.set_font("Helvetica", "", 8)
    pdf.set_text_color(*_MUTED)
    if new_line:
        pdf.cell(width, 5, text.upper(), new_x=XPos.LMARGIN, new_y=YPos.NEXT)
    else:
        pdf.cell(width, 5, text.upper())


def _draw_rule(pdf: FPDF) -> None:
    pdf.set_draw_color(*_RULE)
    pdf.set_line_width(0.4)
    pdf.line(pdf.l_margin, pdf.get_y(), pdf.w - pdf.r_margin, pdf.get_y())
