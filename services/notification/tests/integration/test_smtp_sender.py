"""The SMTP adapter against the devstack's SMTP sink: what is sent arrives as sent, and every
way a provider can fail is classified as final (dead letter) or temporary (retry)."""

from __future__ import annotations

import asyncio
import socket
import ssl
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from ipaddress import ip_address
from pathlib import Path
from typing import Any

import pytest
from aiosmtpd.controller import Controller
from aiosmtpd.smtp import AuthResult, LoginPassword
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from pydantic import SecretStr

from shop.devstack import SmtpSink
from shop.devstack.ports import free_port
from shop.notification.adapters.smtp import SmtpEmailSender
from shop.notification.ports import (
    Attachment,
    Email,
    EmailDeferred,
    EmailRejected,
    EmailUnavailable,
)
from shop.notification.settings import SmtpSettings
from shop.simulators.mail import ProviderFaults


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
def busy_relay() -> Iterator[int]:
    """Defers every recipient, as greylisting does."""

    class Busy:
        async def handle_RCPT(
            self, server: Any, session: Any, envelope: Any, address: str, options: list[str]
        ) -> str:
            return "451 4.7.1 try again later"

    port = free_port()
    controller = Controller(Busy(), hostname="127.0.0.1", port=port)
    controller.start()
    try:
        yield port
    finally:
        controller.stop()


async def test_a_deferred_recipient_is_temporary_and_about_that_email(busy_relay: int) -> None:
    # Greylisting puts off one e-mail; the provider is there (its breaker stays closed).
    with pytest.raises(EmailDeferred, match=r"451 4\.7\.1"):
        await sender_for(busy_relay).send(email_to("ayu@example.com"))


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


@dataclass(frozen=True)
class SecureRelay:
    port: int
    ca_file: Path
    received: list[bytes]


@pytest.fixture
def secure_relay(tmp_path: Path) -> Iterator[SecureRelay]:
    """An SMTP relay as providers run them: STARTTLS required, then a login (user "shop",
    password "s3cret"), with a certificate of its own CA."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.now(UTC)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - timedelta(minutes=5))
        .not_valid_after(now + timedelta(hours=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ip_address("127.0.0.1"))]), False
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), True)
        .sign(key, hashes.SHA256())
    )
    cert_file, key_file = tmp_path / "relay.pem", tmp_path / "relay.key"
    cert_file.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    tls.load_cert_chain(cert_file, key_file)
    received: list[bytes] = []

    class Keep:
        async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
            received.append(bytes(envelope.content))
            return "250 OK"

    def login(server: Any, session: Any, envelope: Any, mechanism: str, data: Any) -> AuthResult:
        ok = isinstance(data, LoginPassword) and (data.login, data.password) == (
            b"shop",
            b"s3cret",
        )
        # handled=False: aiosmtpd itself answers a refusal with 535.
        return AuthResult(success=ok, handled=False)

    port = free_port()
    controller = Controller(
        Keep(),
        hostname="127.0.0.1",
        port=port,
        tls_context=tls,
        require_starttls=True,
        auth_required=True,
        authenticator=login,
    )
    controller.start()
    try:
        yield SecureRelay(port, cert_file, received)
    finally:
        controller.stop()


def secure_sender(relay: SecureRelay, password: str) -> SmtpEmailSender:
    return SmtpEmailSender(
        SmtpSettings(
            host="127.0.0.1",
            port=relay.port,
            security="starttls",
            username="shop",
            password=SecretStr(password),
            ca_file=relay.ca_file,
        )
    )


async def test_starttls_and_a_login_reach_a_relay_that_requires_both(
    secure_relay: SecureRelay,
) -> None:
    await secure_sender(secure_relay, "s3cret").send(email_to("ayu@example.com"))

    [raw] = secure_relay.received
    assert b"Order SK-7KQ4-M2XD confirmed" in raw


async def test_a_wrong_password_is_temporary_so_fixing_it_lets_the_emails_through(
    secure_relay: SecureRelay,
) -> None:
    with pytest.raises(EmailUnavailable, match="Authentication credentials invalid"):
        await secure_sender(secure_relay, "wrong").send(email_to("ayu@example.com"))

    assert secure_relay.received == []


async def test_a_relay_refusing_us_before_any_recipient_is_temporary(
    secure_relay: SecureRelay,
) -> None:
    # No STARTTLS configured: the relay answers the sender with 530, a configuration
    # problem every e-mail would hit, so nothing is dead-lettered for it.
    plain = SmtpEmailSender(SmtpSettings(host="127.0.0.1", port=secure_relay.port))

    with pytest.raises(EmailUnavailable, match="530"):
        await plain.send(email_to("ayu@example.com"))


async def test_an_internationalised_domain_is_sent_in_its_ascii_form(smtp_sink: SmtpSink) -> None:
    await sender_for(smtp_sink.address.port).send(email_to("ayu@bücher.example"))

    [mail] = smtp_sink.messages
    assert mail.rcpt_to == ("ayu@xn--bcher-kva.example",)
    assert mail.message["To"] == "ayu@xn--bcher-kva.example"


async def test_a_send_the_provider_hangs_on_ends_at_once_when_it_is_cancelled(
    smtp_sink: SmtpSink,
) -> None:
    # The handler's timeout cancels the send: it must end then, not after the client's
    # own timeout (a polite QUIT waiting for a reply the hung provider never gives).
    assert smtp_sink.mail_dir is not None
    address = smtp_sink.address
    sender = SmtpEmailSender(SmtpSettings(host=address.host, port=address.port, timeout=30))
    ProviderFaults(hang_rate=1.0).write(smtp_sink.mail_dir)
    try:
        started = time.monotonic()
        with pytest.raises(TimeoutError):
            async with asyncio.timeout(0.5):
                await sender.send(email_to("ayu@example.com"))
        assert time.monotonic() - started < 5
    finally:
        ProviderFaults.clear(smtp_sink.mail_dir)
    assert smtp_sink.messages == []
