"""Sending through any provider's SMTP relay with aiosmtplib, one connection per e-mail.

SMTP says how final a refusal is: a 5xx reply is permanent and a 4xx reply temporary. But
only two permanent refusals are about the e-mail itself: the recipient's (an unknown
mailbox) and the message's (too big, refused content); sending that e-mail again cannot
help, so it is dead-lettered. A 5xx at any other step (greeting, STARTTLS, login, the
sender) says the relay or our configuration of it is wrong: every e-mail would fail alike,
so they are retried, and fixing the configuration lets them through. Timeouts and lost
connections are temporary too.

The connection is opened and closed here rather than by ``aiosmtplib.send``: its context
manager answers a cancellation with a polite QUIT and waits up to the whole timeout for a
reply, which a provider hung on the e-mail never gives; a send cancelled (the handler's
timeout, a shutdown) must end at once.
"""

from __future__ import annotations

import io
import re
from email import encoders
from email.charset import QP, Charset
from email.generator import BytesGenerator
from email.header import Header
from email.message import EmailMessage, Message
from email.mime.base import MIMEBase
from email.mime.multipart import MIMEMultipart
from email.mime.nonmultipart import MIMENonMultipart
from email.policy import compat32
from email.utils import formatdate, parseaddr
from typing import Final

import aiosmtplib
from email_validator import EmailNotValidError, validate_email

from shop.notification.ports import Email, EmailDeferred, EmailRejected, EmailUnavailable
from shop.notification.settings import SmtpSettings


class SmtpEmailSender:
    def __init__(self, settings: SmtpSettings) -> None:
        self.settings = settings

    async def send(self, email: Email) -> None:
        settings = self.settings
        client = aiosmtplib.SMTP(
            hostname=settings.host,
            port=settings.port,
            username=settings.username,
            password=settings.password.get_secret_value() if settings.password else None,
            use_tls=settings.security == "tls",
            start_tls=settings.security == "starttls",
            cert_bundle=str(settings.ca_file) if settings.ca_file else None,
            timeout=settings.timeout,
        )
        try:
            await client.connect()
            message = mime_message(email, sender=settings.sender)
            if isinstance(message, EmailMessage):  # a mailbox that needs SMTPUTF8
                await client.send_message(message)
            else:
                sender = parseaddr(settings.sender)[1]
                await client.sendmail(sender, [str(message["To"])], flattened(message))
        except aiosmtplib.SMTPRecipientsRefused as error:
            raise about_the_email(error.recipients[0], email) from error
        except aiosmtplib.SMTPDataError as error:
            raise about_the_email(error, email) from error
        except (aiosmtplib.SMTPException, OSError) as error:
            raise about_the_provider(error) from error
        finally:
            # Dropped, not QUIT: the e-mail is sent (or not) already, and a cancelled send
            # must not wait on the provider.
            client.close()


_ENHANCED_CODE: Final = re.compile(r"^\s*([245])\.(\d{1,3})\.(\d{1,3})\b")
_ABOUT_THE_RECIPIENT: Final = frozenset({450, 452})
"""Basic codes that put off a mailbox's mail (busy, full) when no enhanced code says more."""


def about_the_email(error: aiosmtplib.SMTPResponseException, email: Email) -> Exception:
    """What the provider's refusal of ``email`` says. A 5xx: that e-mail, for good. A 4xx
    about its recipient (enhanced codes 4.1.x and 4.2.x, greylisting's 4.7.1, or a bare
    450 or 452): that e-mail, for now, with the provider there. Any other 4xx (its system,
    its network, its rate, a 421): the provider, for now."""
    reply = f"{error.code} {error.message}".strip()
    if 500 <= error.code < 600:
        return EmailRejected(f"the provider refused the e-mail to {email.to}: {reply}")
    enhanced = _ENHANCED_CODE.match(error.message)
    if enhanced is None:
        about_the_recipient = error.code in _ABOUT_THE_RECIPIENT
    else:
        subject, detail = enhanced.group(2), enhanced.group(3)
        about_the_recipient = subject in {"1", "2"} or (subject, detail) == ("7", "1")
    if about_the_recipient:
        return EmailDeferred(f"the provider put off the e-mail to {email.to}: {reply}")
    return EmailUnavailable(
        f"the provider deferred the e-mail to {email.to}: {reply}",
        too_fast=_for_the_rate(error.code, error.message),
    )


def about_the_provider(error: Exception) -> EmailUnavailable:
    """The relay or the way to it failed before the e-mail was handed over: a timeout, a
    refused or dropped connection, a refusal of the greeting, STARTTLS, the login or the
    sender; ``too_fast`` when that refusal was for the sender's rate (how Gmail throttles,
    at the greeting or at MAIL FROM)."""
    too_fast = isinstance(error, aiosmtplib.SMTPResponseException) and _for_the_rate(
        error.code, error.message
    )
    return EmailUnavailable(f"{type(error).__name__}: {error}", too_fast=too_fast)


_THROTTLED: Final = re.compile(r"\b(throttl|rate)", re.IGNORECASE)


def _for_the_rate(code: int, message: str) -> bool:
    """A 4xx for the sender's rate: an enhanced 4.7.x (the provider's policy, in practice its
    rate; greylisting's 4.7.1 is about the recipient and told apart before), or a reply
    with no enhanced code that says so (Amazon SES's "454 Throttling failure")."""
    if not 400 <= code < 500:
        return False
    enhanced = _ENHANCED_CODE.match(message)
    if enhanced is not None:
        return enhanced.group(2) == "7" and enhanced.group(3) != "1"
    return _THROTTLED.search(message) is not None


def deliverable_address(address: str) -> str:
    """``address`` with its domain in the ASCII form (``xn--…``) every relay takes: the
    contracts keep addresses normalised in Unicode, and a relay without SMTPUTF8 refuses
    those. A local part beyond ASCII still needs SMTPUTF8; it is left as it is."""
    try:
        checked = validate_email(address, check_deliverability=False)
    except EmailNotValidError:
        return address  # the provider's refusal will say what is wrong with it
    return checked.ascii_email or address


_UTF8: Final = Charset("utf-8")
_UTF8.body_encoding = QP  # readable in the raw message, and never a line too long


def mime_message(email: Email, *, sender: str) -> Message:
    """``email`` as a MIME message: text and HTML alternatives, then the attachments.

    Built with the ``email.mime`` classes: ``EmailMessage``'s content manager and header
    registry cost a millisecond an e-mail, most of what a worker spends on a confirmation
    besides the provider (make bench-notify); these build the same structure in a sixth
    of it. They cannot write an address beyond ASCII (a mailbox name that needs SMTPUTF8),
    so such an e-mail is built the slower way."""
    to = deliverable_address(email.to)
    if not (to.isascii() and sender.isascii()):
        return _utf8_message(email, to=to, sender=sender)
    alternatives = MIMEMultipart("alternative")
    alternatives.attach(_text_part(email.text, "plain"))
    alternatives.attach(_text_part(email.html, "html"))
    message: Message = alternatives
    if email.attachments:
        message = MIMEMultipart("mixed")
        message.attach(alternatives)
        for attachment in email.attachments:
            maintype, _, subtype = attachment.content_type.partition("/")
            part = MIMEBase(maintype, subtype)
            part.set_payload(attachment.data)
            encoders.encode_base64(part)
            filename = attachment.filename
            part.add_header(
                "Content-Disposition",
                "attachment",
                filename=filename if filename.isascii() else ("utf-8", "", filename),
            )
            message.attach(part)
    message["From"] = sender
    message["To"] = to
    # Encoded as RFC 2047 says when it is not ASCII (the shop's subjects are Indonesian).
    subject = email.subject
    message["Subject"] = subject if subject.isascii() else Header(subject, "utf-8").encode()
    message["Message-ID"] = email.message_id
    message["Date"] = formatdate(localtime=False, usegmt=True)
    return message


def _text_part(text: str, subtype: str) -> MIMENonMultipart:
    part = MIMENonMultipart("text", subtype)
    part.set_payload(text, _UTF8)
    return part


_UNFOLDED: Final = compat32.clone(linesep="\r\n", max_line_length=998, mangle_from_=False)
"""How the fast path's messages are written: lines end as SMTP's do, and a header is folded
only beyond SMTP's line limit (at 78, a Message-ID, which has no space to fold at, was
folded before it, and came back with a space in front), and a line that begins "From " is
left as it is (compat32's mbox habit writes it ">From ")."""


def flattened(message: Message) -> bytes:
    out = io.BytesIO()
    BytesGenerator(out, policy=_UNFOLDED).flatten(message)
    return out.getvalue()


def _utf8_message(email: Email, *, to: str, sender: str) -> EmailMessage:
    message = EmailMessage()
    message["From"] = sender
    message["To"] = to
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
