"""The baseline of ``bench_notify.py``: order-confirmation e-mails rendered and sent straight
to an SMTP server, by the service's own renderer and SMTP adapter, with no bus, database or
worker around them. Run by the benchmark as its own process, like the worker it is compared
with, so that neither shares an interpreter (and its GIL) with the SMTP sink.

    python baseline_sender.py EVENTS_FILE SMTP_HOST SMTP_PORT CONCURRENCY

EVENTS_FILE holds one encoded envelope a line: the very bytes the benchmark publishes on the
bus for the worker. Once every e-mail is accepted the process waits to be stopped, so that
the benchmark can still read its CPU time.
"""

from __future__ import annotations

import asyncio
import signal
import sys
from collections.abc import Iterator
from pathlib import Path

from shop.contracts import OrderCreated, decode
from shop.notification.adapters.smtp import SmtpEmailSender
from shop.notification.domain.emails import CONFIRMATION
from shop.notification.domain.kinds import NotificationKind
from shop.notification.domain.rendering import EmailRenderer, ShopIdentity
from shop.notification.ports import Email
from shop.notification.service_layer.notifier import message_id_domain
from shop.notification.settings import NotificationSettings, SmtpSettings


def order_created(body: bytes) -> OrderCreated:
    # The worker's pipeline decodes and validates every message it receives; so does this.
    payload = decode(body).payload
    if not isinstance(payload, OrderCreated):
        raise SystemExit(f"not an OrderCreated event: {body[:120]!r}")
    return payload


class ConfirmationSender:
    """What the worker's handler does for one OrderCreated event, less its database reads
    and writes: render the confirmation, build the Email as ``Notifier._email`` does (same
    fields, same Message-ID), hand it to the SMTP adapter (one connection per e-mail)."""

    def __init__(self, settings: NotificationSettings) -> None:
        shop = settings.shop
        self.renderer = EmailRenderer(
            ShopIdentity(
                name=shop.name,
                address=shop.address,
                support_email=shop.support_email,
                website=shop.website,
            )
        )
        self.sender = SmtpEmailSender(settings.smtp)
        self.domain = message_id_domain(settings.smtp.sender)

    def email(self, event: OrderCreated) -> Email:
        rendered = self.renderer.render(CONFIRMATION, event)
        kind = NotificationKind.ORDER_CONFIRMATION
        return Email(
            to=event.customer_email,
            subject=rendered.subject,
            text=rendered.text,
            html=rendered.html,
            message_id=f"<{kind.value}.{event.order_id}@{self.domain}>",
        )

    async def send(self, body: bytes) -> None:
        await self.sender.send(self.email(order_created(body)))


async def send_all(bodies: list[bytes], sender: ConfirmationSender, concurrency: int) -> None:
    """``concurrency`` senders, each taking the next event as soon as its e-mail is accepted:
    what the worker's in-flight limit allows it to do with a backlog."""
    pending: Iterator[bytes] = iter(bodies)

    async def one_sender() -> None:
        for body in pending:
            await sender.send(body)

    await asyncio.gather(*(one_sender() for _ in range(concurrency)))


def main() -> None:
    events_file, host, port, concurrency = sys.argv[1:5]
    bodies = Path(events_file).read_bytes().splitlines()
    settings = NotificationSettings(
        environment="development", smtp=SmtpSettings(host=host, port=int(port))
    )
    asyncio.run(send_all(bodies, ConfirmationSender(settings), int(concurrency)))
    print(f"sent {len(bodies)} e-mails", flush=True)
    signal.pause()  # until the benchmark has read this process's CPU time and stops it


if __name__ == "__main__":
    main()
