import time
from email.message import EmailMessage
from pathlib import Path

import aiosmtplib
import pytest

from shop.devstack import SmtpSink
from shop.simulators.mail import ProviderFaults, ProviderJournal


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


def small_message() -> EmailMessage:
    message = EmailMessage()
    message["From"] = "orders@shop.example"
    message["To"] = "ayu@example.com"
    message["Subject"] = "Pesanan diterima"
    message.set_content("Terima kasih!")
    return message


async def test_injected_faults_make_the_sink_slow_and_failing_until_cleared(smtp_sink: SmtpSink):
    assert smtp_sink.mail_dir is not None
    address = smtp_sink.address
    ProviderFaults(latency=(0.2, 0.3), failure_rate=1.0).write(smtp_sink.mail_dir)
    try:
        started = time.monotonic()
        with pytest.raises(aiosmtplib.SMTPResponseException) as refused:
            await aiosmtplib.send(small_message(), hostname=address.host, port=address.port)
        assert refused.value.code == 451  # transient: a sender tries again
        assert time.monotonic() - started >= 0.2
        assert smtp_sink.messages == []
    finally:
        ProviderFaults.clear(smtp_sink.mail_dir)
    await aiosmtplib.send(small_message(), hostname=address.host, port=address.port)
    assert len(await smtp_sink.wait_for_async(1)) == 1


def test_faults_are_read_back_and_a_bad_file_means_none(tmp_path: Path):
    faults = ProviderFaults(latency=(0.3, 3.0), failure_rate=0.2)
    faults.write(tmp_path)
    assert ProviderFaults.read(tmp_path) == faults
    (tmp_path / ProviderFaults.FILE).write_text("{not json")
    assert ProviderFaults.read(tmp_path) == ProviderFaults()
    with pytest.raises(ValueError, match="failure_rate"):
        ProviderFaults(failure_rate=2)


async def test_a_reply_dropped_after_the_message_was_taken_leaves_it_delivered_and_noted(
    smtp_sink: SmtpSink,
):
    assert smtp_sink.mail_dir is not None
    address = smtp_sink.address
    message = small_message()
    message["Message-ID"] = "<dropped.1@shop.example>"
    ProviderFaults(drop_reply_rate=1.0).write(smtp_sink.mail_dir)
    try:
        with pytest.raises(aiosmtplib.SMTPServerDisconnected):
            await aiosmtplib.send(message, hostname=address.host, port=address.port, timeout=5)
    finally:
        ProviderFaults.clear(smtp_sink.mail_dir)
    [taken] = smtp_sink.messages
    assert taken.message["Message-ID"] == "<dropped.1@shop.example>"
    [entry] = ProviderJournal(smtp_sink.mail_dir).read()
    assert (entry.what, entry.message_id) == ("dropped reply", "<dropped.1@shop.example>")


async def test_a_message_the_provider_hangs_on_is_never_taken_and_noted(smtp_sink: SmtpSink):
    assert smtp_sink.mail_dir is not None
    address = smtp_sink.address
    message = small_message()
    message["Message-ID"] = "<hung.1@shop.example>"
    ProviderFaults(hang_rate=1.0).write(smtp_sink.mail_dir)
    try:
        with pytest.raises(aiosmtplib.SMTPTimeoutError):
            await aiosmtplib.send(message, hostname=address.host, port=address.port, timeout=1)
    finally:
        ProviderFaults.clear(smtp_sink.mail_dir)
    assert smtp_sink.messages == []
    assert [(e.what, e.message_id) for e in ProviderJournal(smtp_sink.mail_dir).read()] == [
        ("hung", "<hung.1@shop.example>")
    ]


async def test_a_mishap_for_one_message_befalls_one_however_many_come_before_it_is_cleared(
    smtp_sink: SmtpSink,
):
    """Whoever asks for one dropped reply (the chaos monkey) clears the fault only once the
    journal shows it; the messages that arrive meanwhile must go as usual (a provider that
    dropped every reply for seconds once took 402 of them, and a receipt ran out of tries)."""
    assert smtp_sink.mail_dir is not None
    address = smtp_sink.address
    ProviderFaults(once="dropped reply").write(smtp_sink.mail_dir)
    outcomes = []
    try:
        for n in range(5):
            message = small_message()
            message["Message-ID"] = f"<once.{n}@shop.example>"
            try:
                await aiosmtplib.send(message, hostname=address.host, port=address.port, timeout=5)
                outcomes.append("sent")
            except aiosmtplib.SMTPServerDisconnected:
                outcomes.append("dropped")
    finally:
        ProviderFaults.clear(smtp_sink.mail_dir)
    assert outcomes == ["dropped", "sent", "sent", "sent", "sent"]
    assert [e.message_id for e in ProviderJournal(smtp_sink.mail_dir).read()] == [
        "<once.0@shop.example>"
    ]
