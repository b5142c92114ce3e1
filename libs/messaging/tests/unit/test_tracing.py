"""Trace context from span to envelope and back: what ``add()`` stamps, the CONSUMER span of a
handled message, the relay's PRODUCER spans, the trace ids in the logs, and the ``file``
exporter read back by ``read_spans``. Spans are kept in memory (``recording_spans``)."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import MutableMapping
from pathlib import Path
from typing import Any

import pytest
import structlog
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import Link, SpanContext, SpanKind, StatusCode

from shop.contracts import OrderCreated, OrderPaid, encode, examples, wrap
from shop.messaging import MessageContext, OutboxItem, PermanentError, Router, add
from shop.messaging import headers as h
from shop.messaging.errors import PublishError
from shop.messaging.logging import add_trace_ids, configure_logging
from shop.messaging.message import Delivery
from shop.messaging.outbox import add_on_connection
from shop.messaging.pipeline import Pipeline
from shop.messaging.testing import outgoing, recording_spans, stop_recording_spans
from shop.messaging.tracing import (
    MESSAGE_KEY,
    TracingSettings,
    configure_tracing,
    current_traceparent,
    publishing,
    read_spans,
    recording,
    tracer_provider,
)

pytestmark = pytest.mark.unit

INCOMING = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
tracer = trace.get_tracer("tests")


class RecordingSession:
    """Stands in for an AsyncSession: keeps the parameters of what add() executes."""

    def __init__(self) -> None:
        self.executed: list[dict[str, Any]] = []

    async def execute(self, _: object, parameters: dict[str, Any]) -> None:
        self.executed.append(parameters)


class RecordingConnection:
    """Stands in for an asyncpg connection: keeps the arguments of add_on_connection's
    statement."""

    def __init__(self) -> None:
        self.arguments: tuple[object, ...] = ()

    async def execute(self, _: str, *arguments: object) -> None:
        self.arguments = arguments


def traceparent_of(span: trace.Span | ReadableSpan) -> str:
    context = span.get_span_context()
    assert context is not None
    return f"00-{context.trace_id:032x}-{context.span_id:016x}-{context.trace_flags:02x}"


def only(spans: list[ReadableSpan], kind: SpanKind) -> ReadableSpan:
    [span] = [s for s in spans if s.kind == kind]
    return span


def order_created(traceparent: str | None = INCOMING) -> Delivery:
    envelope = wrap(examples.examples()[OrderCreated], key="order-1", traceparent=traceparent)
    message = outgoing(envelope)
    return Delivery(body=message.body, headers=message.headers, source="order.created")


async def test_add_stamps_the_envelope_with_the_current_span() -> None:
    recording_spans()
    session = RecordingSession()
    with tracer.start_as_current_span("POST /v1/orders", kind=SpanKind.SERVER) as request:
        envelope = await add(session, examples.examples()[OrderCreated], key="order-1")  # type: ignore[arg-type]
    assert envelope.traceparent == traceparent_of(request)
    [row] = session.executed
    assert json.loads(row["headers"])[h.TRACEPARENT] == envelope.traceparent


async def test_add_on_connection_stamps_every_envelope_of_the_statement() -> None:
    recording_spans()
    connection = RecordingConnection()
    event = examples.examples()[OrderCreated]
    with tracer.start_as_current_span("POST /v1/orders", kind=SpanKind.SERVER) as request:
        envelopes = await add_on_connection(
            connection,
            OutboxItem(event, key="order-1"),
            OutboxItem(event, key="order-1"),
        )
    assert [e.traceparent for e in envelopes] == [traceparent_of(request)] * 2
    assert encode(envelopes[1]) in connection.arguments


async def test_an_explicit_traceparent_wins_and_none_is_stamped_outside_a_trace() -> None:
    recording_spans()
    session = RecordingSession()
    event = examples.examples()[OrderCreated]
    assert current_traceparent() is None
    outside = await add(session, event, key="o")  # type: ignore[arg-type]
    assert outside.traceparent is None
    with tracer.start_as_current_span("request"):
        given = await add(session, event, key="o", traceparent=INCOMING)  # type: ignore[arg-type]
    assert given.traceparent == INCOMING


async def test_a_handler_runs_in_a_consumer_span_child_of_the_envelopes_traceparent() -> None:
    spans = recording_spans()
    router = Router("payment-service")
    published = []

    @router.subscriber(OrderCreated, transactional=False)
    async def open_payment(event: OrderCreated, ctx: MessageContext) -> None:
        paid = examples.examples()[OrderPaid]
        published.append(await add(RecordingSession(), paid, key=ctx.envelope.key))  # type: ignore[arg-type]

    delivery = order_created()
    await Pipeline(router, system="kafka").process(delivery)

    consumer = only(list(spans.get_finished_spans()), SpanKind.CONSUMER)
    assert consumer.name == "process order.created"
    assert consumer.context is not None
    assert consumer.parent is not None
    assert f"{consumer.context.trace_id:032x}" == INCOMING.split("-")[1]
    assert f"{consumer.parent.span_id:016x}" == INCOMING.split("-")[2]
    attributes = dict(consumer.attributes or {})
    assert attributes["messaging.system"] == "kafka"
    assert attributes["messaging.destination.name"] == "order.created"
    assert attributes["messaging.consumer.group.name"] == "payment-service"
    assert attributes["messaging.message.id"] == delivery.headers[h.EVENT_ID]
    assert attributes[MESSAGE_KEY] == "order-1"
    assert attributes["shop.subscriber"] == "payment-service:open_payment"
    assert consumer.status.status_code == StatusCode.UNSET
    # What the handler publishes is a child of the handler's span, in the same trace.
    [effect] = published
    assert effect.traceparent == traceparent_of(consumer)


async def test_the_consumer_span_is_a_child_of_the_relays_and_linked_to_the_row() -> None:
    spans = recording_spans()
    delivery = order_created()
    sent_by_relay = "00-4bf92f3577b34da6a3ce929d0e0e4736-b7ad6b7169203331-01"
    await Pipeline(Router("payment-service")).process(
        dataclasses.replace(delivery, headers={**delivery.headers, h.TRACEPARENT: sent_by_relay})
    )
    consumer = only(list(spans.get_finished_spans()), SpanKind.CONSUMER)
    assert consumer.parent is not None
    assert f"{consumer.parent.span_id:016x}" == sent_by_relay.split("-")[2]
    [link] = consumer.links
    assert f"{link.context.span_id:016x}" == INCOMING.split("-")[2]


async def test_a_malformed_traceparent_header_falls_back_on_the_envelopes() -> None:
    spans = recording_spans()
    delivery = order_created()
    await Pipeline(Router("payment-service")).process(
        dataclasses.replace(delivery, headers={**delivery.headers, h.TRACEPARENT: "00-zz"})
    )
    consumer = only(list(spans.get_finished_spans()), SpanKind.CONSUMER)
    assert consumer.parent is not None
    assert f"{consumer.parent.span_id:016x}" == INCOMING.split("-")[2]
    assert not consumer.links


async def test_a_test_that_records_spans_leaves_its_provider_set() -> None:
    recording_spans()
    assert recording()  # and nothing here takes it away: the workspace's conftest does


async def test_so_the_next_test_runs_untraced() -> None:
    """Runs after the one above (pytest keeps a file's order)."""
    assert not recording()
    recording_spans()
    stop_recording_spans()
    assert not recording()


async def test_a_retry_and_a_dead_letter_mark_the_span_as_failed_and_say_why() -> None:
    spans = recording_spans()
    router = Router("notification-service")

    @router.subscriber(OrderCreated, transactional=False, max_attempts=2)
    async def confirm(event: OrderCreated, ctx: MessageContext) -> None:
        if ctx.attempt == 1:
            raise TimeoutError("smtp timed out")
        raise PermanentError("bad address")

    pipeline = Pipeline(router)
    await pipeline.process(order_created())
    await pipeline.process(dataclasses.replace(order_created(), attempt=2))
    retried, dead = spans.get_finished_spans()
    assert retried.status.status_code == StatusCode.ERROR
    assert [e.name for e in retried.events] == ["retry scheduled"]
    # The error's type only: its text may quote the payload or a customer's address.
    assert retried.status.description == "TimeoutError"
    assert retried.events[0].attributes == {
        "exception.type": "TimeoutError",
        "shop.message.attempt": 1,
        "shop.retry.delay_seconds": pytest.approx(2.0, rel=0.25),
    }
    assert dead.status.status_code == StatusCode.ERROR
    assert [e.name for e in dead.events] == ["dead-lettered"]
    assert dict(dead.attributes or {})["error.type"] == "PermanentError"


async def test_an_undecodable_body_still_gets_a_span_in_the_headers_trace() -> None:
    spans = recording_spans()
    delivery = Delivery(body=b"not json", headers={h.TRACEPARENT: INCOMING}, source="order.created")
    await Pipeline(Router("order-service")).process(delivery)
    [span] = spans.get_finished_spans()
    assert span.context is not None
    assert f"{span.context.trace_id:032x}" == INCOMING.split("-")[1]
    assert [e.name for e in span.events] == ["dead-lettered"]


async def test_the_relay_sends_each_message_in_a_producer_span_child_of_its_row() -> None:
    spans = recording_spans()
    event = examples.examples()[OrderCreated]
    first = outgoing(wrap(event, key="a", traceparent=INCOMING))
    other = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
    second = outgoing(wrap(event, key="b", traceparent=other))

    with (
        pytest.raises(PublishError),
        publishing([first, second], system="sqs", relay="outbox") as messages,
    ):
        raise PublishError({1}, ConnectionError("one refused"))

    sent, refused = spans.get_finished_spans()
    # Each message goes out carrying its PRODUCER span's context, and nothing else changed.
    assert [m.headers[h.TRACEPARENT] for m in messages] == [
        traceparent_of(sent),
        traceparent_of(refused),
    ]
    for message, row in zip(messages, (first, second), strict=True):
        assert message.body == row.body
        assert {**message.headers, h.TRACEPARENT: None} == {**row.headers, h.TRACEPARENT: None}
    for span, traceparent in ((sent, INCOMING), (refused, other)):
        assert span.kind == SpanKind.PRODUCER
        assert span.name == "send order.created"
        assert span.context is not None
        assert span.parent is not None
        assert f"{span.context.trace_id:032x}" == traceparent.split("-")[1]
        assert f"{span.parent.span_id:016x}" == traceparent.split("-")[2]
    assert dict(sent.attributes or {})["messaging.system"] == "aws.sns"
    assert dict(sent.attributes or {})["messaging.message.id"] == first.headers[h.EVENT_ID]
    assert sent.status.status_code == StatusCode.UNSET
    assert refused.status.status_code == StatusCode.ERROR


async def test_log_lines_carry_the_trace_and_span_of_the_handler() -> None:
    recording_spans()
    configure_logging(json=True)
    assert add_trace_ids in structlog.get_config()["processors"]
    router = Router("notification-service")

    lines: list[MutableMapping[str, Any]] = []

    @router.subscriber(OrderCreated, transactional=False)
    async def confirm(event: OrderCreated, ctx: MessageContext) -> None:
        # What the configured processor adds to any line logged here, through any logger
        # (loggers cached by earlier tests would not pass through a capture).
        lines.append(add_trace_ids(None, "info", {"event": "in the handler"}))

    await Pipeline(router).process(order_created())
    assert [line["event"] for line in lines] == ["in the handler"]
    for line in lines:
        assert line["trace_id"] == INCOMING.split("-")[1]
        assert len(line["span_id"]) == 16
        assert line["span_id"] != INCOMING.split("-")[2]  # the handler's own span


def test_the_file_exporter_writes_spans_that_read_spans_gives_back(tmp_path: Path) -> None:
    settings = TracingSettings(exporter="file", file_dir=tmp_path)
    provider = tracer_provider(settings, service_name="order-service", process_kind="api")
    files = provider.get_tracer("tests")
    with (
        files.start_as_current_span("POST /v1/orders", kind=SpanKind.SERVER) as request,
        files.start_as_current_span("send", attributes={MESSAGE_KEY: "order-7"}),
    ):
        pass
    with files.start_as_current_span("another trace"):
        pass
    provider.force_flush()
    [path] = tmp_path.iterdir()
    with path.open("a") as file:
        file.write('{"trace_id": "half a li')  # a line being written while it is read

    spans = read_spans(tmp_path)
    assert [s.name for s in spans] == ["POST /v1/orders", "send", "another trace"]
    server, send, _ = spans
    assert server.trace_id == f"{request.get_span_context().trace_id:032x}"
    assert (server.kind, server.parent_span_id, server.service) == ("SERVER", None, "order-service")
    assert (server.process_kind, server.pid) == ("api", spans[0].pid)
    assert path.name == f"order-service.api.{server.pid}.jsonl"
    assert send.parent_span_id == server.span_id
    assert send.attributes == {MESSAGE_KEY: "order-7"}
    assert server.start <= send.start <= send.end <= server.end
    assert [s.name for s in read_spans(tmp_path, key="order-7")] == ["POST /v1/orders", "send"]
    assert [s.name for s in read_spans(tmp_path, trace_id=server.trace_id)] == [
        "POST /v1/orders",
        "send",
    ]
    assert read_spans(tmp_path / "nothing here") == []
    provider.shutdown()


def test_the_file_keeps_links_and_finds_keys_it_had_to_escape(tmp_path: Path) -> None:
    settings = TracingSettings(exporter="file", file_dir=tmp_path)
    provider = tracer_provider(settings, service_name="order-service", process_kind="worker")
    files = provider.get_tracer("tests")
    written_in = SpanContext(int("4b" * 16, 16), int("00f0" * 4, 16), is_remote=True)
    key = 'pesanan "é" 7'  # written escaped: \"\u00e9\"
    with files.start_as_current_span(
        "process", links=[Link(written_in)], attributes={MESSAGE_KEY: key}
    ):
        pass
    provider.force_flush()

    [span] = read_spans(tmp_path, key=key)
    assert span.links == (("4b" * 16, "00f0" * 4),)
    provider.shutdown()


def test_no_exporter_sets_nothing_and_the_file_exporter_needs_a_folder() -> None:
    assert configure_tracing(TracingSettings(), service_name="s", process_kind="api") is None
    with pytest.raises(ValueError, match="file_dir"):
        TracingSettings(exporter="file")
