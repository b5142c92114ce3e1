from email.message import EmailMessage

import aiosmtplib
import pytest

from shop.devstack import SmtpSink


async def test_an_email_sent_with_aiosmtplib_is_read_back(smtp_sink: SmtpSink):
    message = EmailMessage()
    message["From"] = "Skincare Shop <orders@shop.example>"
    message["To"] = "ayu@example.com"
    message["Subject"] = "Pesanan SK-7KQ4-M2XD diterima"
    message.set_content("Terima kasih! Total: Rp 250.000")
    message.add_alternative("<p>Terima kasih! Total: <b>Rp 250.000</b></p>", subtype="html")
    message.add_attachment(
        b"%PDF-1.4 invoice", maintype="application", subtype="pdf", filename="invoice.pdf"
    )

    await aiosmtplib.send(
        message, hostname=smtp_sink.address.host, port=smtp_sink.address.port, timeout=10
    )

    [mail] = await smtp_sink.wait_for_async(1)
    assert mail.rcpt_to == ("ayu@example.com",)
    assert mail.subject == "Pesanan SK-7KQ4-M2XD diterima"
    assert "Rp 250.000" in mail.text_body()
    assert "<b>Rp 250.000</b>" in mail.html_body()
    assert mail.attachments() == [("invoice.pdf", "application/pdf", b"%PDF-1.4 invoice")]
    assert smtp_sink.mail_dir is not None
    assert list(smtp_sink.mail_dir.glob("*.eml")), "each mail is also written as a file"


def test_the_sink_is_emptied_between_tests(smtp_sink: SmtpSink):
    assert smtp_sink.messages == []


async def test_a_bounce_mailbox_is_refused_as_unknown_and_nothing_is_kept(smtp_sink: SmtpSink):
    message = EmailMessage()
    message["From"] = "orders@shop.example"
    message["To"] = "bounce+ayu@example.com"
    message["Subject"] = "never delivered"
    message.set_content("-")

    with pytest.raises(aiosmtplib.SMTPRecipientsRefused) as refused:
        await aiosmtplib.send(
            message, hostname=smtp_sink.address.host, port=smtp_sink.address.port, timeout=10
        )

    [recipient] = refused.value.recipients
    assert recipient.code == 550
    assert "mailbox unavailable" in recipient.message
    assert smtp_sink.messages == []
