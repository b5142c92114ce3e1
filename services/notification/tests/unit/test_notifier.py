"""The mark-after-send rule with a fake provider and a fake record: what is sent, what is
recorded, and how each failure is reported to the messaging pipeline."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
import structlog
from structlog.testing import capture_logs

from shop.contracts import Contract, OrderCreated, OrderPaid, wrap
from shop.contracts.examples import examples
from shop.messaging import MessageContext, PermanentError, TransientError
from shop.notification.domain.invoice import InvoiceRenderer
from shop.notification.domain.kinds import NotificationKind
from shop.notification.domain.rendering import EmailRenderer, ShopIdentity
from shop.notification.ports import Email, EmailRejected, EmailUnavailable
from shop.notification.service_layer.notifier import Notifier

SHOP = ShopIdentity("Skincare Shop", "Jl. Kemang Raya 12", "help@shop.example", "https://s.example")


class Provider:
    def __init__(self, failure: Exception | None = None) -> None:
        self.failure = failure
        self.sent: list[Email] = []

    async def send(self, email: Email) -> None:
        if self.failure is not None:
            raise self.failure
        self.sent.append(email)


class SentLog:
    def __init__(self, *, racing: bool = False) -> None:
        self.marks: dict[tuple[uuid.UUID, NotificationKind], dict[str, Any]] = {}
        self.racing = racing
        """Someone else marks the same e-mail between our check and our mark."""

    async def already_sent(self, order_id: uuid.UUID, kind: NotificationKind) -> bool:
        return (order_id, kind) in self.marks

    async def mark_sent(self, order_id: uuid.UUID, kind: NotificationKind, **facts: Any) -> bool:
        if self.racing or (order_id, kind) in self.marks:
            return False
        self.marks[(order_id, kind)] = facts
        return True


def context_of(event: Contract) -> MessageContext:
    envelope = wrap(event, key="k")
    return MessageContext(envelope, "notification-service:test", 1, None, structlog.get_logger())


def notifier(provider: Provider, sent_log: SentLog) -> Notifier:
    return Notifier(
        sent_log,
        provider,
        EmailRenderer(SHOP),
        InvoiceRenderer(SHOP),
        message_id_domain="shop.example",
    )


CREATED = examples()[OrderCreated]
PAID = examples()[OrderPaid]


async def test_the_email_is_sent_then_marked_and_a_redelivery_sends_nothing() -> None:
    provider, sent_log = Provider(), SentLog()
    ctx = context_of(CREATED)

    await notifier(provider, sent_log).confirm_order(CREATED, ctx)
    await notifier(provider, sent_log).confirm_order(CREATED, ctx)

    [email] = provider.sent
    assert email.to == "ayu@example.com"
    assert email.message_id == f"<order_confirmation.{CREATED.order_id}@shop.example>"
    mark = sent_log.marks[(CREATED.order_id, NotificationKind.ORDER_CONFIRMATION)]
    assert mark == {
        "recipient": "ayu@example.com",
        "message_id": email.message_id,
        "event_id": ctx.envelope.event_id,
    }


@pytest.mark.parametrize(
    ("failure", "reported_as"),
    [
        (EmailUnavailable("421 busy"), TransientError),
        (EmailRejected("550 no such mailbox"), PermanentError),
    ],
)
async def test_a_failed_send_marks_nothing_and_says_whether_to_retry(
    failure: Exception, reported_as: type[Exception]
) -> None:
    sent_log = SentLog()

    with pytest.raises(reported_as, match=str(failure)):
        await notifier(Provider(failure), sent_log).confirm_order(CREATED, context_of(CREATED))

    assert sent_log.marks == {}


async def test_the_receipt_carries_the_invoice() -> None:
    provider = Provider()

    await notifier(provider, SentLog()).send_receipt(PAID, context_of(PAID))

    [email] = provider.sent
    [invoice] = email.attachments
    assert invoice.filename == "invoice-SK-7KQ4-M2XD.pdf"
    assert invoice.content_type == "application/pdf"
    assert invoice.data.startswith(b"%PDF")


async def test_an_order_the_email_cannot_state_is_permanent_and_sends_nothing() -> None:
    provider = Provider()
    in_dollars = CREATED.model_copy(update={"currency": "USD"})

    with pytest.raises(PermanentError, match="USD"):
        await notifier(provider, SentLog()).confirm_order(in_dollars, context_of(in_dollars))

    assert provider.sent == []


async def test_two_sends_racing_for_one_mark_are_logged_as_a_duplicate() -> None:
    with capture_logs() as logs:
        await notifier(Provider(), SentLog(racing=True)).confirm_order(
            CREATED,
            context_of(CREATED),
        )

    [warning] = [entry for entry in logs if entry["log_level"] == "warning"]
    assert warning["event"] == "e-mail sent twice"
    assert warning["message_id"].startswith("<order_confirmation.")
