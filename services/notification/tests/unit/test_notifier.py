"""The mark-after-send rule with a fake provider and a fake record: what is sent, what is
recorded, and how each failure is reported to the messaging pipeline."""

from __future__ import annotations

import re
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
import structlog
from structlog.testing import capture_logs

from shop.contracts import Contract, OrderCreated, OrderPaid, OrderPaymentReversed, wrap
from shop.contracts.examples import examples
from shop.contracts.orders import OrderFacts
from shop.messaging import MessageContext, PermanentError, TransientError
from shop.messaging.privacy import FORGOTTEN_EMAIL
from shop.notification.domain.emails import CONFIRMATION, RECEIPT, REVERSAL_NOTICE, OrderEmail
from shop.notification.domain.invoice import InvoiceRenderer
from shop.notification.domain.kinds import NotificationKey, NotificationKind
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
        self.marks: dict[NotificationKey, dict[str, Any]] = {}
        self.racing = racing
        """Someone else marks the same e-mail between our check and our mark."""

    @asynccontextmanager
    async def sending(self, key: NotificationKey) -> AsyncIterator[SentLog]:
        yield self

    async def already_sent(self, key: NotificationKey) -> bool:
        return key in self.marks

    async def mark_sent(self, key: NotificationKey, **facts: Any) -> bool:
        if self.racing or key in self.marks:
            return False
        self.marks[key] = facts
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

    await notifier(provider, sent_log).send(CONFIRMATION, CREATED, ctx)
    await notifier(provider, sent_log).send(CONFIRMATION, CREATED, ctx)

    [email] = provider.sent
    assert email.to == "ayu@example.com"
    assert email.message_id == f"<order_confirmation.{CREATED.order_id}@shop.example>"
    mark = sent_log.marks[NotificationKey(CREATED.order_id, NotificationKind.ORDER_CONFIRMATION)]
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
        await notifier(Provider(failure), sent_log).send(CONFIRMATION, CREATED, context_of(CREATED))

    assert sent_log.marks == {}


async def test_the_logs_name_the_recipient_masked_never_in_the_clear() -> None:
    with capture_logs() as logs:
        await notifier(Provider(), SentLog()).send(CONFIRMATION, CREATED, context_of(CREATED))

    recipients = [entry["to"] for entry in logs if "to" in entry]
    assert recipients == ["a***@example.com", "a***@example.com"]  # sending, then sent
    assert CREATED.customer_email not in repr(logs)


@pytest.mark.parametrize(
    ("failure", "reported_as"),
    [
        (EmailRejected("550 5.1.1 <ayu@example.com>: no such mailbox"), PermanentError),
        (EmailUnavailable("the provider deferred the e-mail to ayu@example.com"), TransientError),
    ],
)
async def test_a_failure_that_quotes_the_address_is_reported_with_it_masked(
    failure: Exception, reported_as: type[Exception]
) -> None:
    with pytest.raises(reported_as) as reported:
        await notifier(Provider(failure), SentLog()).send(
            CONFIRMATION, CREATED, context_of(CREATED)
        )

    assert "a***@example.com" in str(reported.value)
    assert "ayu@example.com" not in str(reported.value)


async def test_the_receipt_carries_the_invoice() -> None:
    provider = Provider()

    await notifier(provider, SentLog()).send(RECEIPT, PAID, context_of(PAID))

    [email] = provider.sent
    [invoice] = email.attachments
    assert invoice.filename == "invoice-SK-7KQ4-M2XD.pdf"
    assert invoice.content_type == "application/pdf"
    assert invoice.data.startswith(b"%PDF")


async def test_an_order_the_email_cannot_state_is_permanent_and_sends_nothing() -> None:
    provider = Provider()
    in_dollars = CREATED.model_copy(update={"currency": "USD"})

    with pytest.raises(PermanentError, match="USD"):
        await notifier(provider, SentLog()).send(CONFIRMATION, in_dollars, context_of(in_dollars))

    assert provider.sent == []


async def test_two_sends_racing_for_one_mark_are_logged_as_a_duplicate() -> None:
    with capture_logs() as logs:
        await notifier(Provider(), SentLog(racing=True)).send(
            CONFIRMATION,
            CREATED,
            context_of(CREATED),
        )

    [warning] = [entry for entry in logs if entry["log_level"] == "warning"]
    assert warning["event"] == "e-mail sent twice"
    assert warning["message_id"].startswith("<order_confirmation.")


REVERSED = examples()[OrderPaymentReversed]


@pytest.mark.parametrize(
    ("email", "event"),
    [(CONFIRMATION, CREATED), (RECEIPT, PAID), (REVERSAL_NOTICE, REVERSED)],
)
async def test_an_order_of_a_forgotten_customer_sends_nothing_and_says_so_without_an_address(
    email: OrderEmail, event: OrderFacts
) -> None:
    provider, sent_log = Provider(), SentLog()
    forgotten = event.model_copy(update={"customer_email": FORGOTTEN_EMAIL})

    with capture_logs() as logs:
        await notifier(provider, sent_log).send(email, forgotten, context_of(forgotten))

    assert provider.sent == []
    assert sent_log.marks == {}
    assert [entry["event"] for entry in logs] == ["customer forgotten; no e-mail sent"]
    assert "@" not in repr(logs)


def reversal(reference: str, **changes: Any) -> OrderPaymentReversed:
    return OrderPaymentReversed.model_validate(
        {**REVERSED.model_dump(), "reference": reference, **changes}
    )


async def test_each_reversal_gets_its_notice_once_however_often_it_is_delivered() -> None:
    provider, sent_log = Provider(), SentLog()
    first = reversal("RF-1", amount=100000, reversed_total=100000)
    second = reversal("RF-2", amount=50000, reversed_total=150000)

    for event in (first, second, first, second):
        await notifier(provider, sent_log).send(REVERSAL_NOTICE, event, context_of(event))

    assert [email.subject for email in provider.sent] == [
        "Partial refund for order SK-7KQ4-M2XD",
        "Partial refund for order SK-7KQ4-M2XD",
    ]
    assert "Rp 100.000 of your payment" in provider.sent[0].text
    assert "Rp 50.000 of your payment" in provider.sent[1].text
    assert "Rp 150.000 has been refunded so far" in provider.sent[1].text
    assert [email.message_id for email in provider.sent] == [
        f"<payment_reversal.{REVERSED.order_id}.RF-1@shop.example>",
        f"<payment_reversal.{REVERSED.order_id}.RF-2@shop.example>",
    ]
    assert set(sent_log.marks) == {
        NotificationKey(REVERSED.order_id, NotificationKind.PAYMENT_REVERSAL, "RF-1"),
        NotificationKey(REVERSED.order_id, NotificationKind.PAYMENT_REVERSAL, "RF-2"),
    }


async def test_a_reversal_notice_is_apart_from_the_order_emails_of_its_order() -> None:
    provider, sent_log = Provider(), SentLog()
    await notifier(provider, sent_log).send(CONFIRMATION, CREATED, context_of(CREATED))

    await notifier(provider, sent_log).send(REVERSAL_NOTICE, REVERSED, context_of(REVERSED))

    assert len(provider.sent) == 2


@pytest.mark.parametrize(
    ("failure", "reported_as"),
    [
        (EmailUnavailable("421 busy"), TransientError),
        (EmailRejected("550 no such mailbox"), PermanentError),
    ],
)
async def test_a_reversal_notice_the_provider_fails_marks_nothing_so_the_retry_sends(
    failure: Exception, reported_as: type[Exception]
) -> None:
    sent_log = SentLog()

    with pytest.raises(reported_as):
        await notifier(Provider(failure), sent_log).send(
            REVERSAL_NOTICE, REVERSED, context_of(REVERSED)
        )
    assert sent_log.marks == {}

    provider = Provider()
    await notifier(provider, sent_log).send(REVERSAL_NOTICE, REVERSED, context_of(REVERSED))
    assert len(provider.sent) == 1
    assert len(sent_log.marks) == 1


async def test_a_reversal_in_another_currency_is_permanent_and_sends_nothing() -> None:
    provider, sent_log = Provider(), SentLog()
    in_dollars = reversal("RF-1", currency="USD")

    with pytest.raises(PermanentError, match="USD"):
        await notifier(provider, sent_log).send(REVERSAL_NOTICE, in_dollars, context_of(in_dollars))

    assert provider.sent == []
    assert sent_log.marks == {}


def test_a_reference_unfit_for_a_message_id_is_put_there_by_its_digest() -> None:
    order_id = uuid.UUID(int=1)
    readable = NotificationKey(order_id, NotificationKind.PAYMENT_REVERSAL, "ref_9-A")
    odd = NotificationKey(order_id, NotificationKind.PAYMENT_REVERSAL, "refund 2 <of> 3@gw")
    long = NotificationKey(order_id, NotificationKind.PAYMENT_REVERSAL, "r" * 500)

    assert (
        readable.message_id("shop.example") == f"<payment_reversal.{order_id}.ref_9-A@shop.example>"
    )
    for key in (odd, long):
        message_id = key.message_id("shop.example")
        assert re.fullmatch(
            rf"<payment_reversal\.{order_id}\.sha256=[0-9a-f]{{32}}@shop\.example>", message_id
        )
        assert message_id == key.message_id("shop.example")
    assert odd.message_id("shop.example") != long.message_id("shop.example")


def test_a_reversal_notice_needs_its_reference_and_no_other_email_has_one() -> None:
    with pytest.raises(ValueError, match="reference"):
        NotificationKey(uuid.UUID(int=1), NotificationKind.PAYMENT_REVERSAL)
    with pytest.raises(ValueError, match="one per order"):
        NotificationKey(uuid.UUID(int=1), NotificationKind.PAYMENT_RECEIPT, "RF-1")
