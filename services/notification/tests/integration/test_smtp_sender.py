"""The SMTP adapter against the devstack's SMTP sink: what is sent arrives as sent, and every
way a provider can fail is classified as final (dead letter) or temporary (retry)."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest

from shop.devstack import SmtpSink
from shop.devstack.process import free_port
from shop.notification.adapters.smtp import SmtpEmailSender
from shop.notification.email import Attachment, Email, EmailRejected, EmailUnavailable
from shop.notification.settings import SmtpSettings


def email_to(address: str) -> Email:
    return Email(
        to=address,
        subject="Order SK-7KQ4-M2XD confirmed",
        text="Total: Rp 250.000",
        html="<p>Total: <b>Rp 250.000</b></p>",
        message_id="<order_confirmation.42@skincare-shop.example>",
        attachments=(Attachment("invoice.pdf", "application/pdf", b"%PDF-1.7 ..."),),
    )


def sender_for(port: int, host: str = "127.0.0.1", timeout: float = 5) -> SmtpEmailSender:
    return SmtpEmailSender(SmtpSettings(host=host, port=port, timeout=timeout))


async def test_an_email_arrives_with_both_parts_its_message_id_and_attachment(
    smtp_sink: SmtpSink,
) -> None:
    await sender_for(smtp_sink.address.port).send(email_to("ayu@example.com"))

    [mail] = smtp_sink.messages
    assert mail.rcpt_to == ("ayu@example.com",)
    assert mail.message["From"] == "Skincare Shop <orders@skincare-shop.example>"
    assert mail.message["Message-ID"] == "<order_confirmation.42@skincare-shop.example>"
    assert mail.text_body().strip() == "Total: Rp 250.000"
    assert "<b>Rp 250.000</b>" in mail.html_body()
    assert mail.attachments() == [("invoice.pdf", "application/pdf", b"%PDF-1.7 ...")]


async def test_an_unknown_mailbox_is_a_final_refusal(smtp_sink: SmtpSink) -> None:
    with pytest.raises(EmailRejected, match=r"bounce@example\.com: 550 5\.1\.1"):
        await sender_for(smtp_sink.address.port).send(email_to("bounce@example.com"))


async def test_a_provider_that_is_down_is_temporary() -> None:
    with pytest.raises(EmailUnavailable, match="SMTPConnect"):
        await sender_for(free_port()).send(email_to("ayu@example.com"))


@pytest.fixture
def silent_server() -> Iterator[int]:
    """Accepts connections and never says a word, like a provider that hangs."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        yield listener.getsockname()[1]


async def test_a_provider_that_hangs_is_temporary(silent_server: int) -> None:
    with pytest.raises(EmailUnavailable, match="Timeout"):
        await sender_for(silent_server, timeout=0.5).send(email_to("ayu@example.com"))
