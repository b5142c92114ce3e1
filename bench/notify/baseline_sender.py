"""The baseline of ``bench_notify.py``: order e-mails (confirmations, or receipts with their
invoice) rendered and sent straight to an SMTP server, by the service's own renderers and
SMTP adapter, with no bus, database or worker around them. Run by the benchmark as its own
process, like the worker it is compared with, so that neither shares an interpreter (and
its GIL) with the SMTP sink.

    python baseline_sender.py EVENTS_FILE SMTP_HOST SMTP_PORT CONCURRENCY [KIND]

EVENTS_FILE holds one encoded envelope a line: the very bytes the benchmark publishes on the
bus for the worker. KIND is the notification kind (``order_confirmation``, the default, or
``payment_receipt``). Once every e-mail is accepted the process waits to be stopped, so
that the benchmark can still read its CPU time.
"""

from __future__ import annotations

import asyncio
import signal
import sys
from collections.abc import Iterator
from pathlib import Path

from shop.contracts import OrderPaid, decode
from shop.contracts.orders import OrderFacts
from shop.notification.adapters.smtp import SmtpEmailSender
from shop.notification.domain.emails import EMAILS, OrderEmail
from shop.notification.domain.invoice import InvoiceRenderer
from shop.notification.domain.kinds import NotificationKind
from shop.notification.domain.rendering import EmailRenderer, ShopIdentity
from shop.notification.ports import Attachment, Email
from shop.notification.service_layer.notifier import message_id_domain
from shop.notification.settings import NotificationSettings, SmtpSettings


def order_email(
    mail: OrderEmail,
    event: OrderFacts,
    renderer: EmailRenderer,
    invoice: bytes | None,
    domain: str,
) -> Email:
    """``mail`` about ``event`` as ``Notifier`` builds it (same fields, same Message-ID),
    with ``invoice``, the PDF, attached when there is one."""
    rendered = renderer.render(mail, event)
    attachments = ()
    if invoice is not None:
        attachments = (
            Attachment(
                filename=f"invoice-{event.order_number}.pdf",
                content_type="application/pdf",
                data=invoice,
            ),
        )
    return Email(
        to=event.customer_email,
        subject=rendered.subject,
        text=rendered.text,
        html=rendered.html,
        message_id=f"<{mail.kind.value}.{event.order_id}@{domain}>",
        attachments=attachments,
    )


class Sender:
    """What the worker's handler does for one event, less its database reads and writes:
    render the e-mail (and its invoice), build the Email as ``Notifier`` does (same fields,
    same Message-ID), hand it to the SMTP adapter."""

    def __init__(self, settings: NotificationSettings, mail: OrderEmail) -> None:
        shop = settings.shop
        identity = ShopIdentity(
            name=shop.name,
            address=shop.address,
            support_email=shop.support_email,
            website=shop.website,
        )
        self.mail = mail
        self.renderer = EmailRenderer(identity)
        self.invoices = InvoiceRenderer(identity)
        self.sender = SmtpEmailSender(settings.smtp)
        self.domain = message_id_domain(settings.smtp.sender)

    def event(self, body: bytes) -> OrderFacts:
        # The worker's pipeline decodes and validates every message it receives; so does this.
        payload = decode(body).payload
        if not isinstance(payload, self.mail.event):
            raise SystemExit(f"not a {self.mail.event.__name__} event: {body[:120]!r}")
        return payload

    def email(self, event: OrderFacts) -> Email:
        invoice = None
        if self.mail.invoice:
            assert isinstance(event, OrderPaid)  # an invoice's e-mail is sent on OrderPaid
            invoice = self.invoices.render(event)
        return order_email(self.mail, event, self.renderer, invoice, self.domain)

    async def send(self, body: bytes) -> None:
        await self.sender.send(self.email(self.event(body)))


async def send_all(bodies: list[bytes], sender: Sender, concurrency: int) -> None:
    """``concurrency`` senders, each taking the next event as soon as its e-mail is accepted:
    what the worker's in-flight limit allows it to do with a backlog."""
    pending: Iterator[bytes] = iter(bodies)

    async def one_sender() -> None:
        for body in pending:
            await sender.send(body)

    await asyncio.gather(*(one_sender() for _ in range(concurrency)))


def main() -> None:
    events_file, host, port, concurrency = sys.argv[1:5]
    kind = NotificationKind(sys.argv[5] if len(sys.argv) > 5 else "order_confirmation")
    mail = next(mail for mail in EMAILS if mail.kind is kind)
    bodies = Path(events_file).read_bytes().splitlines()
    settings = NotificationSettings(
        environment="development", smtp=SmtpSettings(host=host, port=int(port))
    )
    asyncio.run(send_all(bodies, Sender(settings, mail), int(concurrency)))
    print(f"sent {len(bodies)} e-mails", flush=True)
    signal.pause()  # until the benchmark has read this process's CPU time and stops it


if __name__ == "__main__":
    main()
