"""The invoice of a paid order as an A4 PDF, attached to the payment receipt.

Drawn with fpdf2's built-in Helvetica, so the service ships no font files; the price of that is
a single-byte character set, see :meth:`_InvoicePdf.normalize_text`.
"""

from __future__ import annotations

import io
import unicodedata
from collections.abc import Sequence

from fpdf import FPDF, FontFace
from fpdf.enums import XPos, YPos

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

_COLUMNS = ("Product", "SKU", "Qty", "Unit price", "Amount")
_COLUMN_WIDTHS = (66, 36, 12, 30, 30)  # mm, adding up to the width between the margins
_COLUMN_ALIGNMENT = ("LEFT", "LEFT", "RIGHT", "RIGHT", "RIGHT")


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
    pdf.multi_cell(80, 5, event.customer_email, new_x=XPos.LMARGIN, new_y=YPos.NEXT)
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
        pdf.multi_cell(60, 5, value, align="R", new_x=XPos.LMARGIN, new_y=YPos.NEXT)
    pdf.set_y(max(left_bottom, pdf.get_y()) + 8)


def _draw_lines(pdf: FPDF, lines: Sequence[OrderLine]) -> None:
    pdf.set_font("Helvetica", "", 9)
    pdf.set_text_color(*_INK)
    pdf.set_draw_color(*_RULE)
    headings = FontFace(emphasis="BOLD", color=_MUTED, fill_color=(245, 241, 237))
    with pdf.table(
        col_widths=_COLUMN_WIDTHS,
        text_align=_COLUMN_ALIGNMENT,
        borders_layout="HORIZONTAL_LINES",
        headings_style=headings,
        line_height=5,
        padding=(2, 1.5),
        # A long order continues on the next page under the same column headings.
        repeat_headings=1,
    ) as table:
        heading_row = table.row()
        for heading in _COLUMNS:
            heading_row.cell(heading)
        for line in lines:
            row = table.row()
            row.cell(line.name)
            row.cell(line.sku)
            row.cell(str(line.quantity))
            row.cell(rupiah(line.unit_price))
            row.cell(rupiah(line.quantity * line.unit_price))


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
    pdf.multi_cell(
        0,
        5,
        f"Paid in full on {wib(event.paid_at)}.\n"
        f"Payment reference: {event.payment_reference}\n"
        f"Payment ID: {event.payment_id}",
        align="L",
        new_x=XPos.LMARGIN,
        new_y=YPos.NEXT,
    )
    pdf.ln(6)
    pdf.set_font("Helvetica", "", 9)
    pdf.set_text_color(*_MUTED)
    pdf.cell(0, 5, "Thank you for your order.", new_x=XPos.LMARGIN, new_y=YPos.NEXT)


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
