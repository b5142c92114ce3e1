"""Sending each order e-mail once in effect: mark-after-send.

The e-mail goes out first; only once the provider has accepted it is it recorded in
``order_notifications``, whose key admits one row per e-mail (:class:`NotificationKey`: an
order and kind, and the reversal for a reversal notice). A redelivered event finds
the row and sends nothing; a failed send leaves no row, so the retry really sends. Check,
send and record happen under a hold on the key (``SentLog.sending``): a second delivery
arriving meanwhile is retried later, never sent beside the first. The one gap: a crash
between the provider's acceptance and the row (or a provider that took the e-mail and lost
its reply) means one duplicate e-mail, which its stable Message-ID makes recognisable.
Never a lost one.

A forgotten customer's order (its events name :data:`FORGOTTEN_EMAIL`) sends nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from email.utils import parseaddr
from typing import Any

from shop.contracts import OrderPaid, OrderPaymentReversed
from shop.contracts.orders import OrderFacts
from shop.messaging import MessageContext, PermanentError, ProviderUnavailable, TransientError
from shop.messaging.breaker import calling_provider, provider_answered
from shop.messaging.privacy import FORGOTTEN_EMAIL, mask_email, mask_emails
from shop.notification.domain.emails import OrderEmail
from shop.notification.domain.invoice import InvoiceRenderer
from shop.notification.domain.kinds import NotificationKey
from shop.notification.domain.rendering import EmailRenderer, RenderedEmail
from shop.notification.ports import (
    EMAIL_PROVIDER,
    Attachment,
    Email,
    EmailDeferred,
    EmailRejected,
    EmailSender,
    EmailUnavailable,
    RecordOfSent,
    SendingElsewhere,
    SentLog,
)

Composed = tuple[RenderedEmail, tuple[Attachment, ...]]
"""What an e-mail says, and what it carries."""


class Notifier:
    """Sends the order e-mails of ``domain/emails.py``, each once."""

    def __init__(
        self,
        sent_log: SentLog,
        sender: EmailSender,
        renderer: EmailRenderer,
        invoices: InvoiceRenderer,
        *,
        message_id_domain: str,
    ) -> None:
        self.sent_log = sent_log
        self.sender = sender
        self.renderer = renderer
        self.invoices = invoices
        self.message_id_domain = message_id_domain

    async def send(self, email: OrderEmail, event: OrderFacts, ctx: MessageContext) -> None:
        """Send ``email`` about ``event`` once: a reversal notice once per reversal (its
        ``reference``), so that a second partial refund of the same order is another
        e-mail, and a redelivery of the first is none."""
        if event.customer_email.lower() == FORGOTTEN_EMAIL:
            # The customer asked to be forgotten (shopctl forget-customer): the order's
            # later events name the reserved address, which no e-mail is written to.
            ctx.log.info(
                "customer forgotten; no e-mail sent",
                order_id=str(event.order_id),
                kind=email.kind.value,
            )
            return
        reference = event.reference if isinstance(event, OrderPaymentReversed) else ""

        def compose() -> Composed:
            attachments = (self._invoice(event),) if email.invoice else ()
            return self.renderer.render(email, event), attachments

        key = NotificationKey(event.order_id, email.kind, reference)
        await self._send_once(key, event, ctx, compose)

    def _invoice(self, event: OrderFacts) -> Attachment:
        if not isinstance(event, OrderPaid):
            raise ValueError(f"an invoice needs a paid order, not {type(event).__name__}")
        return Attachment(
            filename=f"invoice-{event.order_number}.pdf",
            content_type="application/pdf",
            data=self.invoices.render(event),
        )

    async def _send_once(
        self,
        key: NotificationKey,
        event: OrderFacts,
        ctx: MessageContext,
        compose: Callable[[], Composed],
    ) -> None:
        kind = key.kind
        log = ctx.log.bind(order_id=str(event.order_id), kind=kind.value)
        if key.reference:
            log = log.bind(reference=key.reference)
        try:
            async with self.sent_log.sending(key) as record:
                sent = await self._send_unless_sent(
                    key, event, ctx, compose, record=record, log=log
                )
        except SendingElsewhere as error:
            # Its other delivery either records it (this one then finds it sent) or fails
            # (this one then sends it): either way, later.
            raise TransientError(str(error)) from error
        # Told once the record is kept (the hold's transaction committed), not before.
        if sent is None:
            return
        email, marked = sent
        if marked:
            log.info("e-mail sent", to=mask_email(email.to), message_id=email.message_id)
        else:
            # Recorded by another delivery despite the hold (a hold lost with a database
            # restart mid-send): the customer got the e-mail twice, with one Message-ID.
            log.warning("e-mail sent twice", to=mask_email(email.to), message_id=email.message_id)

    async def _send_unless_sent(
        self,
        key: NotificationKey,
        event: OrderFacts,
        ctx: MessageContext,
        compose: Callable[[], Composed],
        *,
        record: RecordOfSent,
        log: Any,
    ) -> tuple[Email, bool] | None:
        """The e-mail sent and whether this delivery recorded it; None when it was sent
        already."""
        kind = key.kind
        if await record.already_sent(key):
            log.info("e-mail already sent; nothing to do")
            return None
        try:
            email = self._email(key, event, *compose())
        except ValueError as error:
            # The event says something the e-mail cannot (a currency the templates do not
            # print, say): rendering it again would fail the same way.
            raise PermanentError(f"cannot write the {kind.value} e-mail: {error}") from error
        log.info("sending e-mail", to=mask_email(email.to), attempt=ctx.attempt)
        # The provider's words may quote the address: what the retries, the logs and the
        # dead letters keep of them is masked.
        try:
            with calling_provider():
                await self.sender.send(email)
        except EmailRejected as error:
            provider_answered()  # it is there: it refused this e-mail alone
            raise PermanentError(mask_emails(str(error))) from error
        except EmailDeferred as error:
            provider_answered()  # it is there: it put off this e-mail alone
            raise TransientError(mask_emails(str(error))) from error
        except EmailUnavailable as error:
            raise ProviderUnavailable(
                EMAIL_PROVIDER, mask_emails(str(error)), too_fast=error.too_fast
            ) from error
        provider_answered()
        marked = await record.mark_sent(
            key,
            recipient=email.to,
            message_id=email.message_id,
            event_id=ctx.envelope.event_id,
        )
        return email, marked

    def _email(
        self,
        key: NotificationKey,
        event: OrderFacts,
        rendered: RenderedEmail,
        attachments: tuple[Attachment, ...],
    ) -> Email:
        return Email(
            to=event.customer_email,
            subject=rendered.subject,
            text=rendered.text,
            html=rendered.html,
            message_id=key.message_id(self.message_id_domain),
            attachments=attachments,
        )


def message_id_domain(sender: str) -> str:
    """The domain of the From address: Message-IDs are unique within their sender's domain
    (``SmtpSettings`` has checked that there is one)."""
    return parseaddr(sender)[1].rpartition("@")[2]
