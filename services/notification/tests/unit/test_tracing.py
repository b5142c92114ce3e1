"""The e-mail's CLIENT span: a child of whatever span is current, failed when the provider
fails (and the failure still reaches the notifier), never holding the customer's address."""

from __future__ import annotations

import pytest
from opentelemetry import trace
from opentelemetry.trace import SpanKind, StatusCode

from shop.messaging.testing import recording_spans
from shop.notification.adapters.tracing import TracedEmailSender
from shop.notification.ports import Email, EmailUnavailable

pytestmark = pytest.mark.unit

EMAIL = Email(
    to="ayu@example.com",
    subject="Order SK-1 confirmed",
    text="thanks",
    html="<p>thanks</p>",
    message_id="<order_confirmation.1@skincare-shop.example>",
)


class Provider:
    def __init__(self, failure: Exception | None = None) -> None:
        self.failure = failure
        self.sent: list[Email] = []

    async def send(self, email: Email) -> None:
        if self.failure is not None:
            raise self.failure
        self.sent.append(email)


async def test_a_send_is_a_client_span_inside_the_handlers_span() -> None:
    spans = recording_spans()
    provider = Provider()
    with trace.get_tracer("tests").start_as_current_span("process order.created") as handler:
        await TracedEmailSender(provider).send(EMAIL)
    assert provider.sent == [EMAIL]
    [email, _] = spans.get_finished_spans()
    assert (email.name, email.kind) == ("send email", SpanKind.CLIENT)
    assert email.parent is not None
    assert email.parent.span_id == handler.get_span_context().span_id
    assert email.status.status_code == StatusCode.UNSET


async def test_a_provider_failure_fails_the_span_and_is_raised_as_it_was() -> None:
    spans = recording_spans()
    refusal = EmailUnavailable("451 busy, try again: ayu@example.com")
    with pytest.raises(EmailUnavailable, match="busy"):
        await TracedEmailSender(Provider(refusal)).send(EMAIL)
    [email] = spans.get_finished_spans()
    assert email.status.status_code == StatusCode.ERROR
    assert email.status.description == "EmailUnavailable"
    # The refusal's text names the customer: it stays out of the trace.
    assert email.events == ()
    recorded = [str(v) for v in (email.attributes or {}).values()]
    assert not any("ayu@" in value for value in recorded)
