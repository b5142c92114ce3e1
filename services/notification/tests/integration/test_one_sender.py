"""Two deliveries of one event handled at the same moment, by two workers (a message
redelivered while its first delivery is still sending: a Kafka partition moved to another
consumer mid-send, a copy published again by a relay on SQS): one of them sends the e-mail,
the other waits its turn and then finds it sent. Real Postgres and a slow SMTP sink."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
import structlog

from shop.contracts import OrderCreated, wrap
from shop.contracts.examples import examples
from shop.database import create_engine, session_factory
from shop.devstack import SmtpSink
from shop.messaging import MessageContext, TransientError
from shop.notification.adapters.sent_log import SqlSentLog
from shop.notification.adapters.smtp import SmtpEmailSender
from shop.notification.domain.emails import CONFIRMATION
from shop.notification.domain.invoice import InvoiceRenderer
from shop.notification.domain.rendering import EmailRenderer, ShopIdentity
from shop.notification.migrations import migrate_async
from shop.notification.service_layer.notifier import Notifier
from shop.notification.settings import SmtpSettings
from shop.simulators.mail import ProviderFaults

SHOP = ShopIdentity("Skincare Shop", "Jl. Kemang Raya 12", "help@shop.example", "https://s.example")


@pytest.fixture
async def slow_sink(smtp_sink: SmtpSink) -> AsyncIterator[SmtpSink]:
    """The sink takes a second over each e-mail: long enough for a second delivery to
    arrive while the first is still sending."""
    assert smtp_sink.mail_dir is not None  # the session's sink keeps its mail in a folder
    ProviderFaults(latency=(1.0, 1.0)).write(smtp_sink.mail_dir)
    try:
        yield smtp_sink
    finally:
        ProviderFaults.clear(smtp_sink.mail_dir)


async def test_two_deliveries_at_once_send_the_email_once_and_the_second_is_retried(
    database_url: str, slow_sink: SmtpSink
) -> None:
    await migrate_async(database_url)
    engines = [create_engine(database_url) for _ in range(2)]
    smtp = SmtpSettings(host=slow_sink.address.host, port=slow_sink.address.port, timeout=5)
    workers = [
        Notifier(
            SqlSentLog(session_factory(engine)),
            SmtpEmailSender(smtp),
            EmailRenderer(SHOP),
            InvoiceRenderer(SHOP),
            message_id_domain="shop.example",
        )
        for engine in engines
    ]
    event = examples()[OrderCreated].model_copy(update={"order_number": "SK-ONCE-0001"})
    envelope = wrap(event, key=str(event.order_id))
    log = structlog.get_logger()
    try:
        outcomes = await asyncio.gather(
            *(
                worker.send(CONFIRMATION, event, MessageContext(envelope, "n:test", 1, None, log))
                for worker in workers
            ),
            return_exceptions=True,
        )
        # The retry of the delivery that waited: it finds the e-mail sent.
        await workers[1].send(CONFIRMATION, event, MessageContext(envelope, "n:test", 2, None, log))
    finally:
        for engine in engines:
            await engine.dispose()

    assert sorted(type(outcome).__name__ for outcome in outcomes) == ["NoneType", "TransientError"]
    [waited] = [o for o in outcomes if isinstance(o, TransientError)]
    assert "another delivery is sending" in str(waited)
    sent = [m for m in slow_sink.messages if m.subject == "Order SK-ONCE-0001 confirmed"]
    assert len(sent) == 1, [m.message["Message-ID"] for m in sent]
