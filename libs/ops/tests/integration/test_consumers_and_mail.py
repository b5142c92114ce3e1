"""The workers' counters over a real health port, and the e-mails a real SMTP sink kept."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from email.message import EmailMessage

import aiosmtplib

from shop.devstack.smtp import SmtpSink
from shop.messaging.breaker import BreakerState
from shop.messaging.health import HealthServer
from shop.messaging.metrics import Metrics
from shop.messaging.outcome import Ack, DeadLetter, Failure, Retry
from shop.messaging.pipeline import OutcomeRecord
from shop.ops.consumers import ConsumerCounts, consumer_counts
from shop.ops.mail import captured
from shop.ops.settings import OpsSettings

NOW = datetime(2026, 12, 3, tzinfo=UTC)
UNAVAILABLE = Failure("EmailUnavailable", "451 try again later")


async def test_each_groups_counts_come_from_its_workers_metrics() -> None:
    metrics = Metrics()
    for outcome in (Ack(), Retry(2.0, 1, UNAVAILABLE, NOW), DeadLetter(UNAVAILABLE, 8, NOW, NOW)):
        metrics.observe(
            OutcomeRecord("notification-service", "send_receipt", "order.paid", 1, outcome, 0.1)
        )
    metrics.breaker_changed("smtp", BreakerState.HALF_OPEN)
    health = HealthServer(metrics.registry, dict, host="127.0.0.1", port=0)
    await health.start()
    try:
        url = f"http://127.0.0.1:{health.port}"
        settings = OpsSettings(
            environment="test",
            order_worker_url=url,
            payment_worker_url=url,
            notification_worker_url=url,
        )
        counts = await consumer_counts(settings)
    finally:
        await health.stop()
    breakers = ("smtp half-open",)  # one worker answers for the three here
    assert counts == [
        ConsumerCounts("notification-service", 1, 2, 1, 1, breakers),
        ConsumerCounts("order-service", 0, 0, 0, 0, breakers),
        ConsumerCounts("payment-service", 0, 0, 0, 0, breakers),
    ]


async def test_the_emails_the_sink_kept_are_read_with_their_invoices(smtp_sink: SmtpSink) -> None:
    message = EmailMessage()
    message["From"] = "orders@skincare-shop.example"
    message["To"] = "ayu@example.com"
    subject = f"Your receipt for SK-7KQ4-M2XD ({uuid.uuid4().hex[:8]})"
    message["Subject"] = subject
    message.set_content("Thank you.")
    message.add_alternative("<p>Thank you for SK-7KQ4-M2XD.</p>", subtype="html")
    message.add_attachment(
        b"%PDF-1.7 invoice", maintype="application", subtype="pdf", filename="invoice.pdf"
    )
    await aiosmtplib.send(message, hostname=smtp_sink.address.host, port=smtp_sink.address.port)
    await smtp_sink.wait_for_async(1)

    # The sink's folder is the session's: earlier tests' e-mails may be in it too.
    (newest,) = [
        mail
        for mail in await captured(OpsSettings(environment="test", mail_dir=smtp_sink.mail_dir))
        if mail.subject == subject
    ]

    assert newest.to == "ayu@example.com"
    assert "SK-7KQ4-M2XD" in newest.html
    assert [(pdf.filename, pdf.content) for pdf in newest.pdfs] == [
        ("invoice.pdf", b"%PDF-1.7 invoice")
    ]
