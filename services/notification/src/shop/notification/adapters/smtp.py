"""Sending through any provider's SMTP relay with aiosmtplib, one connection per e-mail.

SMTP says how final a refusal is: a 5xx reply is permanent (an unknown mailbox, a message
the provider will never take) and a 4xx reply temporary (busy, greylisting). Timeouts and
lost connections are temporary too. Authentication failures are a configuration problem:
retried, so that fixing the password lets the waiting e-mails through.
"""

from __future__ import annotations

from email.message import EmailMessage
from email.utils import formatdate

import aiosmtplib
import structlog

from shop.notification.email import Email, EmailRejected, EmailUnavailable
from shop.notification.settings import SmtpSettings

log = structlog.get_logger("shop.notification.smtp")


class SmtpEmailSender:
    def __init__(self, settings: SmtpSettings) -> None:
        self.settings = settings

    async def send(self, email: Email) -> None:
        settings = self.settings
        try:
            await aiosmtplib.send(
                mime_message(email, sender=settings.sender),
                hostname=settings.host,
                port=settings.port,
                username=settings.username,
                password=settings.password.get_secret_value() if settings.password else None,
                use_tls=settings.security == "tls",
                start_tls=settings.security == "starttls",
                cert_bundle=settings.ca_file,
                timeout=settings.timeout,
            )
        except aiosmtplib.SMTPRecipientsRefused as error:
            raise _classified(error.recipients[0], email) from error
        except aiosmtplib.SMTPAuthenticationError as error:
            raise EmailUnavailable(f"SMTP authentication failed: {error}") from error
        except aiosmtplib.SMTPResponseException as error:
            raise _classified(error, email) from error
        except (aiosmtplib.SMTPException, OSError) as error:
            # Timeouts, refused or dropped connections: the provider may answer later.
            raise EmailUnavailable(f"{type(error).__name__}: {error}") from error


def _classified(error: aiosmtplib.SMTPResponseException, email: Email) -> Exception:
    reply = f"{error.code} {error.message}".strip()
    if 500 <= error.code < 600:
        return EmailRejected(f"the provider refused the e-mail to {email.to}: {reply}")
    return EmailUnavailable(f"the provider deferred the e-mail to {email.to}: {reply}")


def mime_message(email: Email, *, sender: str) -> EmailMessage:
    """``email`` as a MIME message: text and HTML alternatives, then the attachments."""
    message = EmailMessage()
    message["From"] = sender
    message["To"] = email.to
    message["Subject"] = email.subject
    message["Message-ID"] = email.message_id
    message["Date"] = formatdate(localtime=False, usegmt=True)
    message.set_content(email.text)
    message.add_alternative(email.html, subtype="html")
    for attachment in email.attachments:
        maintype, _, subtype = attachment.content_type.partition("/")
        message.add_attachment(
            attachment.data, maintype=maintype, subtype=subtype, filename=attachment.filename
        )
    return message
