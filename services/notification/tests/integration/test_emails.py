"""The notification worker on real Postgres, the Kafka-protocol broker and the SMTP sink:
each order event becomes one e-mail, whatever the bus and the provider do."""

from __future__ import annotations

import io
from typing import Any

import pypdf

from shop.contracts import OrderCancelled, OrderCreated, OrderPaid, OrderPaymentReversed
from shop.contracts.payments import ReversalKind
from shop.devstack import SmtpSink
from shop.messaging.testing import eventually, running
from shop.notification.adapters.faults import FaultyEmailSender
from shop.notification.adapters.smtp import SmtpEmailSender
from shop.notification.bootstrap import build_worker
from shop.notification.settings import FaultSettings, NotificationSettings


def counted(worker: Any, metric: str) -> float:
    """The sum of a worker metric over all its labels."""
    value = 0.0
    for family in worker.metrics.registry.collect():
        for sample in family.samples:
            if sample.name == f"{metric}_total":
                value += sample.value
    return value


async def test_each_order_event_becomes_its_email_with_the_invoice_on_the_receipt(
    notification_settings: NotificationSettings,
    bus: Any,
    order_event: Any,
    smtp_sink: SmtpSink,
    recorded: Any,
) -> None:
    created = order_event(OrderCreated)
    paid = order_event(OrderPaid, payment_reference="PAY-7731")
    cancelled = order_event(OrderCancelled, reason="changed my mind")
    worker = build_worker(notification_settings, health_port=0)
    async with running(worker):
        await bus.publish(created, paid, cancelled)
        mails = await smtp_sink.wait_for_async(3, within=60)

    by_subject = {mail.subject: mail for mail in mails}
    confirmation = by_subject[f"Order {created.payload.order_number} confirmed"]
    receipt = by_subject[f"Receipt for order {paid.payload.order_number}"]
    cancellation = by_subject[f"Order {cancelled.payload.order_number} cancelled"]
    for mail, envelope in ((confirmation, created), (receipt, paid), (cancellation, cancelled)):
        assert mail.rcpt_to == ("ayu@example.com",)
        assert envelope.payload.order_number in mail.text_body()
        assert envelope.payload.order_number in mail.html_body()
        assert "Rp 250.000" in mail.text_body()
        assert "Niacinamide 10% Serum 30 ml" in mail.html_body()
    assert confirmation.message["Message-ID"] == (
        f"<order_confirmation.{created.payload.order_id}@skincare-shop.example>"
    )
    assert "changed my mind" in cancellation.text_body()
    assert confirmation.attachments() == []
    [(filename, content_type, pdf)] = receipt.attachments()
    assert (filename, content_type) == (
        f"invoice-{paid.payload.order_number}.pdf",
        "application/pdf",
    )
    text = "".join(page.extract_text() for page in pypdf.PdfReader(io.BytesIO(pdf)).pages)
    assert paid.payload.order_number in text
    assert "PAY-7731" in text
    assert sorted(await recorded()) == sorted(
        [
            (created.payload.order_id, "order_confirmation"),
            (paid.payload.order_id, "payment_receipt"),
            (cancelled.payload.order_id, "order_cancellation"),
        ]
    )


async def test_each_reversal_of_a_payment_gets_its_own_email_once(
    notification_settings: NotificationSettings,
    bus: Any,
    order_event: Any,
    smtp_sink: SmtpSink,
    recorded: Any,
) -> None:
    first = order_event(
        OrderPaymentReversed,
        reference="RF-1",
        amount=100000,
        reversed_total=100000,
        status="partially_refunded",
    )
    order = first.payload
    facts = {"order_id": order.order_id, "order_number": order.order_number}
    second = order_event(
        OrderPaymentReversed,
        **facts,
        reference="RF-2",
        amount=150000,
        reversed_total=250000,
        status="refunded",
    )
    chargeback = order_event(
        OrderPaymentReversed,
        kind=ReversalKind.CHARGEBACK,
        reference="CB-1",
        amount=250000,
        reversed_total=250000,
        status="charged_back",
    )
    worker = build_worker(notification_settings, health_port=0)
    async with running(worker):
        await bus.publish(first, second, chargeback)
        await smtp_sink.wait_for_async(3, within=60)
        # Each again: recorded, so nothing more is sent.
        await bus.publish(first, second, chargeback)

        async def all_six_handled() -> bool:
            return counted(worker, "messaging_consumed") == 6

        await eventually(all_six_handled, within=30, what="six deliveries handled")

    assert len(smtp_sink.messages) == 3
    by_id = {mail.message["Message-ID"]: mail for mail in smtp_sink.messages}
    domain = "skincare-shop.example"
    partial = by_id[f"<payment_reversal.{order.order_id}.RF-1@{domain}>"]
    completing = by_id[f"<payment_reversal.{order.order_id}.RF-2@{domain}>"]
    charged_back = by_id[f"<payment_reversal.{chargeback.payload.order_id}.CB-1@{domain}>"]
    assert partial.subject == f"Partial refund for order {order.order_number}"
    assert "We have refunded Rp 100.000 of your payment" in partial.text_body()
    assert "Rp 100.000 has been refunded so far" in partial.text_body()
    assert completing.subject == f"Refund for order {order.order_number} completed"
    assert "Rp 250.000 has been refunded so far" in completing.text_body()
    assert "Your bank has reversed your payment of Rp 250.000" in charged_back.text_body()
    assert "on hold" in charged_back.html_body()
    for mail in (partial, completing, charged_back):
        assert mail.rcpt_to == ("ayu@example.com",)
        assert mail.attachments() == []
    assert sorted(await recorded(references=True)) == sorted(
        [
            (order.order_id, "payment_reversal", "RF-1"),
            (order.order_id, "payment_reversal", "RF-2"),
            (chargeback.payload.order_id, "payment_reversal", "CB-1"),
        ]
    )


async def test_the_same_event_delivered_three_times_sends_one_email(
    notification_settings: NotificationSettings,
    bus: Any,
    order_event: Any,
    smtp_sink: SmtpSink,
    recorded: Any,
) -> None:
    created = order_event(OrderCreated)
    worker = build_worker(notification_settings, health_port=0)
    async with running(worker):
        await bus.publish(created)
        await smtp_sink.wait_for_async(1, within=60)
        await bus.publish(created, created)

        async def all_three_handled() -> bool:
            return counted(worker, "messaging_consumed") == 3

        await eventually(all_three_handled, within=30, what="three deliveries handled")

    assert len(smtp_sink.messages) == 1
    assert await recorded() == [(created.payload.order_id, "order_confirmation")]


async def test_with_the_provider_failing_half_the_time_every_order_gets_one_email(
    notification_settings: NotificationSettings,
    bus: Any,
    order_event: Any,
    smtp_sink: SmtpSink,
    recorded: Any,
) -> None:
    settings = notification_settings.model_copy(update={"max_attempts": 20})
    flaky = FaultyEmailSender(
        SmtpEmailSender(settings.smtp),
        FaultSettings(enabled=True, min_latency=0, max_latency=0.05, failure_rate=0.5, seed=5),
    )
    orders = [order_event(OrderCreated) for _ in range(12)]
    worker = build_worker(settings, sender=flaky, health_port=0)
    async with running(worker):
        await bus.publish(*orders)
        await smtp_sink.wait_for_async(12, within=120)

        async def all_recorded() -> bool:
            return len(await recorded()) == 12

        await eventually(all_recorded, within=30, what="twelve e-mails recorded")
        retried = counted(worker, "messaging_retried")

    subjects = sorted(mail.subject for mail in smtp_sink.messages)
    assert subjects == sorted(f"Order {o.payload.order_number} confirmed" for o in orders)
    assert sorted(await recorded()) == sorted(
        (o.payload.order_id, "order_confirmation") for o in orders
    )
    assert retried > 0, "half the sends failed: the retries must show in the metrics"
    assert counted(worker, "messaging_dead_lettered") == 0


async def test_a_refused_address_or_an_unprintable_order_ends_as_a_dead_letter_with_the_reason(
    notification_settings: NotificationSettings,
    bus: Any,
    order_event: Any,
    smtp_sink: SmtpSink,
    recorded: Any,
) -> None:
    refused = order_event(OrderCreated, customer_email="bounce@example.com")
    in_dollars = order_event(OrderCreated, currency="USD")
    fine = order_event(OrderCreated)
    worker = build_worker(notification_settings, health_port=0)
    dead_letters = worker.dead_letters("notification-service")
    async with running(worker):
        await bus.publish(refused, in_dollars, fine)
        await smtp_sink.wait_for_async(1, within=60)

        async def both_dead_lettered() -> bool:
            return len(await dead_letters.list()) == 2

        await eventually(both_dead_lettered, within=30, what="two dead letters")
        letters = {letter.key: letter for letter in await dead_letters.list()}

    bounced = letters[refused.key]
    assert bounced.error_type == "PermanentError"
    assert "550" in bounced.error_message
    # Which address, masked: the dead letter keeps no customer's address in the clear.
    assert "b***@example.com" in bounced.error_message
    assert "bounce@example.com" not in bounced.error_message
    assert bounced.attempts == 1, "a refusal is not retried"
    assert bounced.message_type == "order.created"
    unprintable = letters[in_dollars.key]
    assert unprintable.error_type == "PermanentError"
    assert "USD" in unprintable.error_message
    assert unprintable.attempts == 1
    assert [mail.rcpt_to for mail in smtp_sink.messages] == [("ayu@example.com",)]
    assert await recorded() == [(fine.payload.order_id, "order_confirmation")]
