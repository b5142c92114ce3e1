"""What an SMTP provider's refusal of one e-mail says: about the e-mail for good, about
this e-mail for now (the provider is there), or about the provider."""

from __future__ import annotations

import aiosmtplib
import pytest

from shop.notification.adapters.smtp import about_the_email, about_the_provider
from shop.notification.ports import Email, EmailDeferred, EmailRejected, EmailUnavailable

EMAIL = Email("ayu@example.com", "s", "t", "<p>h</p>", "<1@skincare-shop.example>")


@pytest.mark.parametrize(
    ("code", "message", "meaning"),
    [
        (550, "5.1.1 <x@example.com>: mailbox unavailable", EmailRejected),
        (452, "4.2.2 mailbox full", EmailDeferred),
        (450, "4.2.0 greylisted, try again later", EmailDeferred),
        (451, "4.7.1 greylisted, please retry", EmailDeferred),
        (450, "mailbox busy", EmailDeferred),
        (421, "4.3.2 service shutting down", EmailUnavailable),
        (451, "4.3.0 temporary failure, try again later", EmailUnavailable),
        (451, "4.7.0 sending rate exceeded, slow down", EmailUnavailable),
        (451, "local error in processing", EmailUnavailable),
    ],
)
def test_a_refusal_is_told_apart_by_its_codes(
    code: int, message: str, meaning: type[Exception]
) -> None:
    # A full mailbox or greylisting puts off one e-mail, and says the provider is there;
    # five of them in a row must not open the provider's breaker for every e-mail.
    error = aiosmtplib.SMTPResponseException(code, message)
    assert type(about_the_email(error, EMAIL)) is meaning


@pytest.mark.parametrize(
    ("code", "message", "too_fast"),
    [
        (451, "4.7.0 sending rate exceeded, slow down", True),
        (421, "4.7.0 too many connections, slow down", True),
        (450, "4.7.28 our system has detected an unusual rate", True),
        (421, "4.3.2 service shutting down", False),
        (451, "4.3.0 temporary failure, try again later", False),
        (451, "local error in processing", False),
    ],
)
def test_a_refusal_for_the_senders_rate_says_so(code: int, message: str, too_fast: bool) -> None:
    # 4.7.x but greylisting's 4.7.1: the provider's policy, in practice its rate. Its
    # rate limit slows down, instead of the breaker counting the provider away.
    refusal = about_the_email(aiosmtplib.SMTPResponseException(code, message), EMAIL)
    assert isinstance(refusal, EmailUnavailable)
    assert refusal.too_fast is too_fast


@pytest.mark.parametrize(
    ("error", "too_fast"),
    [
        (aiosmtplib.SMTPConnectResponseError(421, "4.7.0 too many connections, slow down"), True),
        (aiosmtplib.SMTPSenderRefused(451, "4.7.28 unusual rate of mail", "shop@example"), True),
        (aiosmtplib.SMTPResponseException(454, "Throttling failure: Maximum sending rate"), True),
        (aiosmtplib.SMTPConnectResponseError(421, "4.3.2 service shutting down"), False),
        (aiosmtplib.SMTPServerDisconnected("connection lost"), False),
        (ConnectionRefusedError(111, "refused"), False),
    ],
)
def test_a_refusal_before_the_email_for_the_senders_rate_says_so(
    error: Exception, too_fast: bool
) -> None:
    # How Gmail throttles (at the greeting or MAIL FROM), and Amazon SES's 454.
    unavailable = about_the_provider(error)
    assert isinstance(unavailable, EmailUnavailable)
    assert unavailable.too_fast is too_fast
