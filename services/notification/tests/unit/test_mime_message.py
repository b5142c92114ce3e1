"""The MIME message an e-mail becomes reads back, as a mail client parses it, to what the
e-mail said: both alternatives, the attachments, the headers (encoded where they are not
ASCII), on the fast path and on the one for mailboxes that need SMTPUTF8."""

from __future__ import annotations

import email
import email.policy
from email.message import EmailMessage

import aiosmtplib.email
import pytest

from shop.notification.adapters.smtp import flattened, mime_message
from shop.notification.ports import Attachment, Email

INVOICE = Attachment("invoice-SHOP-1.pdf", "application/pdf", b"%PDF-1.7\n\x00\xff\xfe" * 50)


def an_email(to: str, *, attachments: tuple[Attachment, ...] = ()) -> Email:
    return Email(
        to=to,
        subject="Pesanan SHOP-1 dikonfirmasi ✓",
        text="Halo Ségolène,\n" + "terima kasih " * 40,
        html="<p>Halo Ségolène,</p>",
        message_id="<order_confirmation.1@shop.example>",
        attachments=attachments,
    )


def as_received(to: str, attachments: tuple[Attachment, ...] = ()) -> tuple[bytes, EmailMessage]:
    """The bytes aiosmtplib sends for the e-mail, and what a client parses of them."""
    message = mime_message(
        an_email(to, attachments=attachments), sender="Toko <orders@shop.example>"
    )
    raw = (
        aiosmtplib.email.flatten_message(message, utf8=True)
        if isinstance(message, EmailMessage)
        else flattened(message)
    )
    parsed = email.message_from_bytes(raw, policy=email.policy.default)
    assert isinstance(parsed, EmailMessage)
    return raw, parsed


def lines(text: str) -> list[str]:
    """As a client shows it: the line ends of the wire and a final one are no difference."""
    return text.rstrip().splitlines()


@pytest.mark.parametrize("to", ["budi@example.com", "budi@exämple.com", "büdi@example.com"])
def test_an_email_reads_back_as_it_was_written(to: str) -> None:
    raw, parsed = as_received(to, (INVOICE,))
    assert parsed["Subject"] == "Pesanan SHOP-1 dikonfirmasi ✓"
    assert parsed["Message-ID"] == "<order_confirmation.1@shop.example>"
    assert parsed["From"] == "Toko <orders@shop.example>"
    assert parsed["Date"]
    plain = parsed.get_body(preferencelist=("plain",))
    html = parsed.get_body(preferencelist=("html",))
    assert plain is not None
    assert html is not None
    assert lines(plain.get_content()) == lines(an_email(to).text)
    assert lines(html.get_content()) == ["<p>Halo Ségolène,</p>"]
    [invoice] = parsed.iter_attachments()
    assert invoice.get_filename() == INVOICE.filename
    assert invoice.get_content_type() == INVOICE.content_type
    assert invoice.get_content() == INVOICE.data
    assert max(len(line) for line in raw.splitlines()) <= 998  # SMTP's line limit


def test_the_recipients_domain_is_written_in_ascii() -> None:
    _, parsed = as_received("budi@exämple.com")
    assert parsed["To"] == "budi@xn--exmple-cua.com"


def test_a_mailbox_beyond_ascii_is_written_as_utf8_not_encoded() -> None:
    # An encoded word is no address: such a mailbox needs SMTPUTF8, and the header as it is.
    raw, parsed = as_received("büdi@example.com")
    assert parsed["To"] == "büdi@example.com"
    assert "büdi@example.com".encode() in raw


def test_an_email_without_attachments_is_just_its_two_alternatives() -> None:
    _, parsed = as_received("budi@example.com")
    assert parsed.get_content_type() == "multipart/alternative"
    assert [part.get_content_type() for part in parsed.iter_parts()] == ["text/plain", "text/html"]


def test_a_long_message_id_is_not_folded() -> None:
    # Folded at 78 characters, it came back with a space in front of it.
    message_id = (
        f"<order_confirmation.{'5b1c6a8e-0a4e-4d1c-9d1e-3f0e2a7b9c11'}@skincare-shop.example.com>"
    )
    email_ = an_email("budi@example.com")
    message = mime_message(
        Email(email_.to, email_.subject, email_.text, email_.html, message_id),
        sender="Toko <orders@shop.example>",
    )
    parsed = email.message_from_bytes(flattened(message), policy=email.policy.default)
    assert str(parsed["Message-ID"]) == message_id


def test_a_line_beginning_with_from_is_left_as_it_is() -> None:
    # An mbox habit: "From " at a line's start written as ">From ".
    email_ = an_email("budi@example.com")
    text = "Dari toko kami:\nFrom Nature Skincare, with love"
    message = mime_message(
        Email(email_.to, email_.subject, text, email_.html, email_.message_id),
        sender="Toko <orders@shop.example>",
    )
    parsed = email.message_from_bytes(flattened(message), policy=email.policy.default)
    plain = parsed.get_body(preferencelist=("plain",))
    assert plain is not None
    assert lines(plain.get_content()) == lines(text)
