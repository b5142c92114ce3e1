"""An order e-mail in its order's trace: the worker's CONSUMER span continues the event's
``traceparent`` header, and the hand-over to the SMTP sink is a CLIENT span inside it."""

from __future__ import annotations

from typing import Any

from opentelemetry.trace import SpanKind

from shop.contracts import OrderCreated
from shop.devstack import SmtpSink
from shop.messaging.testing import in_trace, recording_spans, running
from shop.notification.bootstrap import build_worker
from shop.notification.settings import NotificationSettings

CHECKOUT = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"


async def test_the_confirmation_is_sent_in_a_client_span_of_the_orders_trace(
    notification_settings: NotificationSettings, bus: Any, order_event: Any, smtp_sink: SmtpSink
) -> None:
    spans = recording_spans()
    created = order_event(OrderCreated)
    async with running(build_worker(notification_settings, health_port=0)):
        with in_trace(CHECKOUT):  # sent with this traceparent header
            await bus.publish(created)
        await smtp_sink.wait_for_async(1, within=60)

    finished = spans.get_finished_spans()
    [consumer] = [s for s in finished if s.kind == SpanKind.CONSUMER]
    [email] = [s for s in finished if s.kind == SpanKind.CLIENT]
    assert consumer.context is not None
    assert consumer.parent is not None
    assert f"{consumer.context.trace_id:032x}" == CHECKOUT.split("-")[1]
    assert f"{consumer.parent.span_id:016x}" == CHECKOUT.split("-")[2]
    assert email.name == "send email"
    assert email.parent is not None
    assert email.parent.span_id == consumer.context.span_id
    assert dict(email.attributes or {})["shop.email.message_id"] == (
        f"<order_confirmation.{created.payload.order_id}@skincare-shop.example>"
    )
    # The customer's address stays out of the traces.
    for span in (consumer, email):
        assert not any("ayu@" in str(value) for value in (span.attributes or {}).values())
