"""The messaging spans: the relay's PRODUCER span per message it sends, and a CONSUMER
span per delivery, each a child of the ``traceparent`` header its message carries."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any, Final

from opentelemetry import trace
from opentelemetry.trace import INVALID_SPAN, Span, SpanKind, StatusCode

from shop.contracts import Contract, Envelope
from shop.messaging import headers as h
from shop.messaging.errors import PublishError
from shop.messaging.message import Delivery, OutgoingMessage
from shop.messaging.outcome import Ack, DeadLetter, Outcome, Retry
from shop.messaging.tracing import propagation
from shop.messaging.tracing.attributes import (
    ATTEMPT,
    CONSUMER_GROUP,
    DEAD_LETTERED,
    DUPLICATE,
    MESSAGE_KEY,
    MESSAGE_TYPE,
    RETRY_DELAY,
    RETRY_SCHEDULED,
    SUBSCRIBER,
)
from shop.messaging.tracing.provider import messaging_tracer, recording

_CONSUMING_SYSTEMS: Final = {"kafka": "kafka", "sqs": "aws_sqs"}
_PUBLISHING_SYSTEMS: Final = {"kafka": "kafka", "sqs": "aws.sns"}
"""``messaging.system`` by transport name (the memory transport keeps its own name); on
SQS, messages are published to SNS and consumed from SQS."""


# --- consuming -----------------------------------------------------------------------


@contextmanager
def consuming(
    delivery: Delivery,
    envelope: Envelope[Contract] | None,
    *,
    group: str,
    system: str | None,
) -> Iterator[Span]:
    """The CONSUMER span of one delivery, current while it is handled: a child of the
    ``traceparent`` header the message came with (the relay's PRODUCER span, or the span
    its outbox row was written in where the relay does not trace); a trace of its own when
    the header is missing or malformed. Without a TracerProvider it is the incoming context
    itself, so that logs and what the handler adds to the outbox still carry the trace."""
    parent = propagation.extract(delivery.headers)
    if not recording():
        # No span to record: the incoming context alone is made current (or none at all).
        incoming = trace.get_current_span(parent)
        if not incoming.get_span_context().is_valid:
            yield INVALID_SPAN
            return
        with trace.use_span(incoming):
            yield incoming
        return
    message_type = envelope.type if envelope else delivery.headers.get(h.MESSAGE_TYPE)
    span = messaging_tracer().start_span(
        f"process {message_type or 'message'}", context=parent, kind=SpanKind.CONSUMER
    )
    if span.is_recording():
        attributes: dict[str, Any] = {
            "messaging.operation.type": "process",
            "messaging.operation.name": "process",
            "messaging.destination.name": delivery.source,
            CONSUMER_GROUP: group,
            ATTEMPT: delivery.attempt,
        }
        if system:
            attributes["messaging.system"] = _CONSUMING_SYSTEMS.get(system, system)
        if envelope is not None:
            attributes.update(
                {
                    "messaging.message.id": str(envelope.event_id),
                    "messaging.message.conversation_id": envelope.correlation_id,
                    MESSAGE_TYPE: envelope.type,
                    MESSAGE_KEY: envelope.key,
                }
            )
        span.set_attributes(attributes)
    with trace.use_span(span, end_on_exit=True, record_exception=False):
        yield span


def record_outcome(span: Span, outcome: Outcome, *, subscriber_id: str | None) -> None:
    """What became of the delivery, on its CONSUMER span: a retry or a dead letter is an
    error with an event naming the error's type. Never its message: a message may quote the
    payload (a contract error does) or a customer's address, and spans leave the shop."""
    if not span.is_recording():
        return
    if subscriber_id is not None:
        span.set_attribute(SUBSCRIBER, subscriber_id)
    if isinstance(outcome, Ack):
        if outcome.duplicate:
            span.set_attribute(DUPLICATE, True)
        return
    failure = outcome.failure
    reason = {"exception.type": failure.error_type}
    span.set_attribute("error.type", failure.error_type)
    span.set_status(StatusCode.ERROR, failure.error_type)
    if isinstance(outcome, Retry):
        span.add_event(
            RETRY_SCHEDULED, {**reason, ATTEMPT: outcome.attempt, RETRY_DELAY: outcome.delay}
        )
    elif isinstance(outcome, DeadLetter):
        span.add_event(DEAD_LETTERED, {**reason, "shop.dead_letter.attempts": outcome.attempts})


# --- publishing ----------------------------------------------------------------------


@contextmanager
def publishing(
    messages: Sequence[OutgoingMessage], *, system: str, relay: str
) -> Iterator[Sequence[OutgoingMessage]]:
    """A PRODUCER span per message while the relay publishes them, each a child of the
    ``traceparent`` its outbox row was written with; those the transport did not confirm
    end as errors. Yields the messages to send: each with its span's context in place of
    its row's, so that its consumers' spans are the span's children. Without a
    TracerProvider, no span and ``messages`` as they are (a batch is a thousand rows)."""
    if not recording():
        yield messages
        return
    spans = [_producer_span(message, system=system, relay=relay) for message in messages]
    try:
        yield [_sent_from(span, message) for span, message in zip(spans, messages, strict=True)]
    except PublishError as error:
        for i in error.failed:
            spans[i].set_status(StatusCode.ERROR, str(error))
        raise
    except BaseException as error:
        for span in spans:
            span.set_status(StatusCode.ERROR, repr(error))
        raise
    finally:
        for span in spans:
            span.end()


def _sent_from(span: Span, message: OutgoingMessage) -> OutgoingMessage:
    if not span.get_span_context().is_valid:
        return message  # a no-op span: the row's own traceparent goes on
    headers = dict(message.headers)
    propagation.inject(headers, trace.set_span_in_context(span))
    return dataclasses.replace(message, headers=headers)


def _producer_span(message: OutgoingMessage, *, system: str, relay: str) -> Span:
    headers = message.headers
    message_type = headers.get(h.MESSAGE_TYPE, message.topic)
    attributes: dict[str, Any] = {
        "messaging.system": _PUBLISHING_SYSTEMS.get(system, system),
        "messaging.operation.type": "send",
        "messaging.operation.name": "send",
        "messaging.destination.name": message.topic,
        MESSAGE_TYPE: message_type,
        MESSAGE_KEY: message.key,
        "shop.relay.name": relay,
    }
    if h.EVENT_ID in headers:
        attributes["messaging.message.id"] = headers[h.EVENT_ID]
    if h.CORRELATION_ID in headers:
        attributes["messaging.message.conversation_id"] = headers[h.CORRELATION_ID]
    return messaging_tracer().start_span(
        f"send {message_type}",
        context=propagation.extract(headers),
        kind=SpanKind.PRODUCER,
        attributes=attributes,
    )
