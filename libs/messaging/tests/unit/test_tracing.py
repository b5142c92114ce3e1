"""Trace context from span to message header and back: the ``traceparent`` ``add()`` writes
in the row's headers, the CONSUMER span of a handled message, the relay's PRODUCER spans,
the trace ids in the logs, and the choice of exporter. Spans are kept in memory
(``recording_spans``); the ``file`` exporter is shop.devstack's (its tests/unit/test_spans.py)."""

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
from opentelemetry.trace import SpanKind, StatusCode

from shop.contracts import OrderCreated, OrderPaid, encode, examples, wrap
from shop.messaging import MessageContext, OutboxItem, PermanentError, Router, add
from shop.messaging import headers as h
from shop.messaging.errors import PublishError
from shop.messaging.logging import add_trace_ids, configure_logging
from shop.messaging.message import Delivery, OutgoingMessage
from shop.messaging.outbox import add_on_connection
from shop.messaging.pipeline import Pipeline
from shop.messaging.testing import in_trace, outgoing, recording_spans, stop_recording_spans
from shop.messaging.tracing import (
    MESSAGE_KEY,
    ExporterNotInstalled,
    TracingSettings,
    configure_tracing,
    provider,
    recording,
)
from shop.messaging.tracing.spans import publishing

pytestmark = pytest.mark.unit

INCOMING = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
tracer = trace.get_tracer("tests")


class RecordingSession:
    """Stands in for an AsyncSession: keeps the parameters of what add() executes."""

    def __init__(self) -> None:
        self.executed: list[dict[str, Any]] = []

    async def execute(self, _: object, parameters: dict[str, Any]) -> None:
        self.executed.append(parameters)

    def traceparents(self) -> list[str | None]:
        """The ``traceparent`` header of each row written."""
        return [json.loads(row["headers"]).get(h.TRACEPARENT) for row in self.executed]


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


def with_traceparent(message: OutgoingMessage, traceparent: str | None) -> OutgoingMessage:
    """``message`` as a row written in the span ``traceparent`` names (None: outside any)."""
    headers = {k: v for k, v in message.headers.items() if k != h.TRACEPARENT}
    if traceparent is not None:
        headers[h.TRACEPARENT] = traceparent
    return dataclasses.replace(message, headers=headers)


def order_created(
    traceparent: str | None = INCOMING, *, in_envelope: str | None = None
) -> Delivery:
    """An OrderCreated delivery whose ``traceparent`` header is ``traceparent``; its envelope's
    own, no longer read, field is ``in_envelope``, as a message of an older release had it."""
    envelope = wrap(examples.examples()[OrderCreated], key="order-1", traceparent=in_envelope)
    message = with_traceparent(outgoing(envelope), traceparent)
    return Delivery(body=message.body, headers=message.headers, source="order.created")


async def test_add_writes_the_current_span_in_the_rows_traceparent_header() -> None:
    recording_spans()
    session = RecordingSession()
    with tracer.start_as_current_span("POST /v1/orders", kind=SpanKind.SERVER) as request:
        envelope = await add(session, examples.examples()[OrderCreated], key="order-1")  # type: ignore[arg-type]
    assert session.traceparents() == [traceparent_of(request)]
    # One trace context per message: the header, not the envelope.
    assert envelope.traceparent is None


async def test_add_on_connection_writes_it_in_every_row_of_the_statement() -> None:
    recording_spans()
    connection = RecordingConnection()
    event = examples.examples()[OrderCreated]
    with tracer.start_as_current_span("POST /v1/orders", kind=SpanKind.SERVER) as request:
        envelopes = await add_on_connection(
            connection,
            OutboxItem(event, key="order-1"),
            OutboxItem(event, key="order-1"),
        )
    # Six columns a row, the headers fourth.
    headers = [json.loads(str(connection.arguments[i])) for i in (3, 9)]
    assert [row[h.TRACEPARENT] for row in headers] == [traceparent_of(request)] * 2
    assert [e.traceparent for e in envelopes] == [None, None]
    assert encode(envelopes[1]) in connection.arguments


async def test_none_is_written_outside_a_trace_and_the_current_context_inside_one() -> None:
    recording_spans()
    session = RecordingSession()
    event = examples.examples()[OrderCreated]
    await add(session, event, key="o")  # type: ignore[arg-type]
    with in_trace(INCOMING):
        await add(session, event, key="o")  # type: ignore[arg-type]
    assert session.traceparents() == [None, INCOMING]


async def test_a_handler_runs_in_a_consumer_span_child_of_the_headers_traceparent() -> None:
    spans = recording_spans()
    router = Router("payment-service")
    outbox = RecordingSession()

    @router.subscriber(OrderCreated, transactional=False)
    async def open_payment(event: OrderCreated, ctx: MessageContext) -> None:
        paid = examples.examples()[OrderPaid]
        await add(outbox, paid, key=ctx.envelope.key)  # type: ignore[arg-type]

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
    assert outbox.traceparents() == [traceparent_of(consumer)]


async def test_the_consumer_span_is_a_child_of_the_header_alone_with_no_link() -> None:
    """An envelope of an older release also carried a traceparent (the row's, where the
    header was the relay's): it is no longer read, neither as parent nor as link."""
    spans = recording_spans()
    sent_by_relay = "00-4bf92f3577b34da6a3ce929d0e0e4736-b7ad6b7169203331-01"
    await Pipeline(Router("payment-service")).process(
        order_created(sent_by_relay, in_envelope=INCOMING)
    )
    consumer = only(list(spans.get_finished_spans()), SpanKind.CONSUMER)
    assert consumer.parent is not None
    assert f"{consumer.parent.span_id:016x}" == sent_by_relay.split("-")[2]
    assert not consumer.links


async def test_a_malformed_traceparent_header_starts_a_trace_of_its_own() -> None:
    spans = recording_spans()
    await Pipeline(Router("payment-service")).process(order_created("00-zz", in_envelope=INCOMING))
    consumer = only(list(spans.get_finished_spans()), SpanKind.CONSUMER)
    assert consumer.parent is None
    assert consumer.context is not None
    assert f"{consumer.context.trace_id:032x}" != INCOMING.split("-")[1]
    assert not consumer.links


async def test_an_untraced_process_carries_the_incoming_traceparent_on() -> None:
    """With no TracerProvider (the ``none`` exporter) there is no span, but the handler runs
    in the incoming context: its logs and what it adds to the outbox carry that trace."""
    assert not recording()
    router = Router("payment-service")
    outbox = RecordingSession()
    lines: list[MutableMapping[str, Any]] = []

    @router.subscriber(OrderCreated, transactional=False)
    async def open_payment(event: OrderCreated, ctx: MessageContext) -> None:
        lines.append(add_trace_ids(None, "info", {"event": "in the handler"}))
        await add(outbox, examples.examples()[OrderPaid], key=ctx.envelope.key)  # type: ignore[arg-type]

    await Pipeline(router).process(order_created(INCOMING))
    assert outbox.traceparents() == [INCOMING]
    [line] = lines
    assert (line["trace_id"], line["span_id"]) == tuple(INCOMING.split("-")[1:3])


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
    first = with_traceparent(outgoing(wrap(event, key="a")), INCOMING)
    other = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
    second = with_traceparent(outgoing(wrap(event, key="b")), other)

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


async def test_a_traces_vendor_state_travels_beside_its_traceparent() -> None:
    """W3C ``tracestate``, as a caller may send it with its ``traceparent``: written in the
    row beside it, and sent on by the relay's span, which keeps its parent's state."""
    spans = recording_spans()
    session = RecordingSession()
    with in_trace(INCOMING, tracestate="vendor=opaque"):
        await add(session, examples.examples()[OrderCreated], key="o")  # type: ignore[arg-type]
    [row] = [json.loads(parameters["headers"]) for parameters in session.executed]
    assert (row[h.TRACEPARENT], row[h.TRACESTATE]) == (INCOMING, "vendor=opaque")

    message = dataclasses.replace(
        outgoing(wrap(examples.examples()[OrderCreated], key="o")), headers=row
    )
    with publishing([message], system="kafka", relay="outbox") as sent:
        pass
    [send] = spans.get_finished_spans()
    assert sent[0].headers[h.TRACEPARENT] == traceparent_of(send)
    assert sent[0].headers[h.TRACESTATE] == "vendor=opaque"


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


def test_no_exporter_sets_nothing_and_the_file_exporter_needs_a_folder() -> None:
    assert configure_tracing(TracingSettings(), service_name="s", process_kind="api") is None
    with pytest.raises(ValueError, match="file_dir"):
        TracingSettings(exporter="file")


def test_the_file_exporter_is_refused_where_shop_devstack_is_not_installed(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """As in the shop's image: a process told to write spans to files stops at start-up."""
    monkeypatch.setattr(provider, "entry_points", lambda **_: ())
    settings = TracingSettings(exporter="file", file_dir=tmp_path)
    with pytest.raises(ExporterNotInstalled, match="shop-devstack"):
        configure_tracing(settings, service_name="s", process_kind="api")
    assert not recording()
