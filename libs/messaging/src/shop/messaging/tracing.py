"""Traces across the processes, with OpenTelemetry: one trace per checkout, from the HTTP
request through the outbox row, the relay's publish and every handler it leads to.

The trace goes from process to process in W3C Trace Context ``traceparent`` values:
:func:`~shop.messaging.outbox.add` stamps the envelope's from the span current when the row
is written (the request's, or the handler's); the relay's PRODUCER span is its child and
sends its own context in the message's ``traceparent`` header; each consumer's CONSUMER
span is a child of that header (linked to the envelope's, where the row was written), and
whatever a handler adds to the outbox is a child of the handler's span. So a trace reads
request → send → process → send → process. The HTTP request's SERVER span is FastAPI's own
(:mod:`shop.web.tracing`).

Tracing is on in a process once :func:`configure_tracing` has set its TracerProvider; with
the ``none`` exporter (the default) nothing is set and OpenTelemetry's no-op tracer stays:
the request path creates no span at all and the relay skips its spans, while consumers still
carry an incoming ``traceparent`` on to what they publish and into their logs.

The ``file`` exporter writes each process's spans as JSON lines to a file of its own in
``file_dir``, for development and tests: :func:`read_spans` reads them back, of all
processes at once.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import threading
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final, Literal, Self

from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import (
    BatchSpanProcessor,
    ConsoleSpanExporter,
    SimpleSpanProcessor,
    SpanExporter,
    SpanExportResult,
)
from opentelemetry.sdk.trace.sampling import ParentBased, TraceIdRatioBased
from opentelemetry.trace import (
    INVALID_SPAN,
    Link,
    NonRecordingSpan,
    Span,
    SpanContext,
    SpanKind,
    StatusCode,
    TraceFlags,
)
from pydantic import BaseModel, Field, model_validator

from shop.contracts import Contract, Envelope
from shop.contracts.envelope import TRACEPARENT_PATTERN
from shop.messaging import headers as h
from shop.messaging.errors import PublishError
from shop.messaging.message import Delivery, OutgoingMessage
from shop.messaging.outcome import Ack, DeadLetter, Outcome, Retry

ProcessKind = Literal["api", "worker", "relay"]

PROCESS_KIND: Final = "shop.process.kind"
"""Resource attribute: which of a service's processes made a span (``api``, ``worker``…)."""
MESSAGE_KEY: Final = "shop.message.key"
"""Span attribute: the message's aggregate key (an order's id for the order events), by
which :func:`read_spans` finds one order's traces."""
MESSAGE_TYPE: Final = "shop.message.type"
ATTEMPT: Final = "shop.message.attempt"
SUBSCRIBER: Final = "shop.subscriber"
DUPLICATE: Final = "shop.message.duplicate"
CONSUMER_GROUP: Final = "messaging.consumer.group.name"
RETRY_DELAY: Final = "shop.retry.delay_seconds"
RETRY_SCHEDULED: Final = "retry scheduled"
"""The CONSUMER span's event of a failed try that will be tried again."""
DEAD_LETTERED: Final = "dead-lettered"

_CONSUMING_SYSTEMS: Final = {"kafka": "kafka", "sqs": "aws_sqs"}
_PUBLISHING_SYSTEMS: Final = {"kafka": "kafka", "sqs": "aws.sns"}
"""``messaging.system`` by transport name (the memory transport keeps its own name); on
SQS, messages are published to SNS and consumed from SQS."""

_TRACEPARENT: Final = re.compile(TRACEPARENT_PATTERN)


class TracingSettings(BaseModel):
    """Where a process's spans go. Each service's settings hold one (``SHOP_<SERVICE>_
    TRACING__EXPORTER`` …); off by default."""

    exporter: Literal["none", "otlp", "console", "file"] = "none"
    """``none``: no spans at all (no cost); ``otlp``: OTLP over HTTP to ``otlp_endpoint``
    (the standard ``OTEL_EXPORTER_OTLP_*`` variables add headers or certificates);
    ``console``: printed on stdout; ``file``: JSON lines in ``file_dir``, for development
    and tests."""
    otlp_endpoint: str = "http://127.0.0.1:4318/v1/traces"
    service_name: str | None = None
    """``service.name`` of the spans; by default the service's own (``order-service``)."""
    file_dir: Path | None = None
    """The ``file`` exporter's folder: one ``<service>.<process kind>.<pid>.jsonl`` file
    per process, read back by :func:`read_spans`."""
    sample_ratio: float = Field(default=1.0, ge=0, le=1)
    """Share of new traces recorded; a trace that came with its request or message keeps
    the decision its parent made, so a trace is recorded whole or not at all."""

    @model_validator(mode="after")
    def file_needs_a_folder(self) -> Self:
        if self.exporter == "file" and self.file_dir is None:
            raise ValueError("the file exporter needs file_dir (TRACING__FILE_DIR)")
        return self

    @property
    def enabled(self) -> bool:
        return self.exporter != "none"


def configure_tracing(
    settings: TracingSettings, *, service_name: str, process_kind: ProcessKind
) -> TracerProvider | None:
    """Set this process's TracerProvider, once: the first configuration of a process stays
    (so does one a test installed first); ``none`` sets nothing. Returns the provider in
    use, if any. Spans still buffered are exported when the process exits."""
    if not settings.enabled:
        return None
    current = trace.get_tracer_provider()
    if isinstance(current, TracerProvider):
        return current
    provider = tracer_provider(settings, service_name=service_name, process_kind=process_kind)
    trace.set_tracer_provider(provider)
    return provider


def tracer_provider(
    settings: TracingSettings, *, service_name: str, process_kind: ProcessKind
) -> TracerProvider:
    """A TracerProvider exporting as ``settings`` say (not installed: see
    :func:`configure_tracing`)."""
    resource = Resource.create(
        {
            "service.name": settings.service_name or service_name,
            "service.namespace": "shop",
            "process.pid": os.getpid(),
            PROCESS_KIND: process_kind,
        }
    )
    provider = TracerProvider(
        resource=resource, sampler=ParentBased(TraceIdRatioBased(settings.sample_ratio))
    )
    provider.add_span_processor(_processor(settings, resource))
    return provider


def _processor(settings: TracingSettings, resource: Resource) -> SpanProcessor:
    if settings.exporter == "otlp":
        # Imported here: a process that does not export over OTLP never loads its client.
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import (  # noqa: PLC0415
            OTLPSpanExporter,
        )

        return BatchSpanProcessor(OTLPSpanExporter(endpoint=settings.otlp_endpoint))
    if settings.exporter == "console":
        return SimpleSpanProcessor(ConsoleSpanExporter())
    assert settings.file_dir is not None  # checked by the settings
    # A short delay: a developer (or a test) reads one order's trace a moment after it ends.
    return BatchSpanProcessor(SpanFile(settings.file_dir, resource), schedule_delay_millis=200)


def recording() -> bool:
    """Whether this process has a TracerProvider (else spans cost nothing and record
    nothing, and the relay makes none)."""
    return not isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider)


_kept: tuple[trace.TracerProvider, trace.Tracer] | None = None


def _tracer() -> trace.Tracer:
    # The tracer of the provider in use, kept with that provider: a test may replace the
    # provider (shop.messaging.testing), and a kept ProxyTracer would stay with the first.
    global _kept  # noqa: PLW0603  # one provider in use per process
    provider = trace.get_tracer_provider()
    if _kept is None or _kept[0] is not provider:
        _kept = (provider, provider.get_tracer("shop.messaging"))
    return _kept[1]


# --- trace context on envelopes ------------------------------------------------------


def current_traceparent() -> str | None:
    """The W3C ``traceparent`` of the span current in this task, for a new envelope; None
    outside any trace."""
    context = trace.get_current_span().get_span_context()
    return _traceparent(context) if context.is_valid else None


def _traceparent(context: SpanContext) -> str:
    return f"00-{context.trace_id:032x}-{context.span_id:016x}-{context.trace_flags:02x}"


def log_ids() -> dict[str, str | None]:
    """``trace_id`` and ``span_id`` of the current span, for a log line (None outside any
    trace)."""
    context = trace.get_current_span().get_span_context()
    if not context.is_valid:
        return {"trace_id": None, "span_id": None}
    return {"trace_id": f"{context.trace_id:032x}", "span_id": f"{context.span_id:016x}"}


def parent_context(traceparent: str | None) -> Context | None:
    """The context of which a span started for a message with ``traceparent`` is a child
    (None: it starts a trace of its own, as it does for a malformed ``traceparent``)."""
    remote = _remote_span_context(traceparent)
    return trace.set_span_in_context(NonRecordingSpan(remote)) if remote else None


def _remote_span_context(traceparent: str | None) -> SpanContext | None:
    # What the W3C propagator extracts, without its carrier and getter machinery (several
    # times the cost, for every message handled).
    if not traceparent or not _TRACEPARENT.match(traceparent) or traceparent[:2] == "ff":
        return None
    _, trace_hex, span_hex, flags = traceparent.split("-")
    trace_id, span_id = int(trace_hex, 16), int(span_hex, 16)
    if not trace_id or not span_id:
        return None
    return SpanContext(trace_id, span_id, is_remote=True, trace_flags=TraceFlags(int(flags, 16)))


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
    relay's PRODUCER span, whose context the ``traceparent`` header carries, and linked to
    the envelope's ``traceparent`` where the two differ (a message published by a relay that
    does not trace carries the envelope's own). Without a TracerProvider it is the incoming
    context itself, so that logs and published envelopes still carry the trace."""
    written_in = envelope.traceparent if envelope else None
    traceparent = _sent_traceparent(delivery) or written_in
    if not recording():
        # No span to record: the incoming context alone is made current (or none at all).
        remote = _remote_span_context(traceparent)
        if remote is None:
            yield INVALID_SPAN
            return
        with trace.use_span(NonRecordingSpan(remote)) as incoming:
            yield incoming
        return
    message_type = envelope.type if envelope else delivery.headers.get(h.MESSAGE_TYPE)
    origin = _remote_span_context(written_in) if written_in != traceparent else None
    span = _tracer().start_span(
        f"process {message_type or 'message'}",
        context=parent_context(traceparent),
        kind=SpanKind.CONSUMER,
        links=[Link(origin)] if origin else None,
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


def _sent_traceparent(delivery: Delivery) -> str | None:
    """The header's ``traceparent``, if it is one (a malformed header counts as none)."""
    value = delivery.headers.get(h.TRACEPARENT)
    return value if _remote_span_context(value) else None


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
    """A PRODUCER span per message while the relay publishes them, each a child of its
    row's ``traceparent``; those the transport did not confirm end as errors. Yields the
    messages to send: each with its span's context in its ``traceparent`` header, so that
    its consumers' spans are the span's children. Without a TracerProvider, no span and
    ``messages`` as they are (a batch is a thousand rows)."""
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
    context = span.get_span_context()
    if not context.is_valid:
        return message  # a no-op span: the row's own traceparent goes on
    headers = {**message.headers, h.TRACEPARENT: _traceparent(context)}
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
    return _tracer().start_span(
        f"send {message_type}",
        context=parent_context(headers.get(h.TRACEPARENT)),
        kind=SpanKind.PRODUCER,
        attributes=attributes,
    )


# --- the file exporter and reading it back -------------------------------------------


@dataclass(frozen=True, slots=True)
class RecordedEvent:
    name: str
    at: datetime
    attributes: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class RecordedSpan:
    """One span as the ``file`` exporter wrote it. Ids are lowercase hex (32 and 16
    digits), as in a ``traceparent``; ``kind`` is ``SERVER``, ``CLIENT``, ``PRODUCER``,
    ``CONSUMER`` or ``INTERNAL``; ``status`` is ``UNSET``, ``OK`` or ``ERROR``."""

    trace_id: str
    span_id: str
    parent_span_id: str | None
    name: str
    kind: str
    service: str
    process_kind: str | None
    pid: int | None
    start: datetime
    end: datetime
    status: str
    status_message: str | None
    attributes: Mapping[str, Any]
    events: tuple[RecordedEvent, ...] = ()
    links: tuple[tuple[str, str], ...] = ()
    """``(trace_id, span_id)`` of each linked span: a consumer's, the span its message's
    row was written in."""

    @property
    def seconds(self) -> float:
        return (self.end - self.start).total_seconds()

    @classmethod
    def from_json(cls, line: Mapping[str, Any]) -> RecordedSpan:
        return cls(
            trace_id=line["trace_id"],
            span_id=line["span_id"],
            parent_span_id=line.get("parent_span_id"),
            name=line["name"],
            kind=line["kind"],
            service=line["service"],
            process_kind=line.get("process_kind"),
            pid=line.get("pid"),
            start=_datetime(line["start_unix_nano"]),
            end=_datetime(line["end_unix_nano"]),
            status=line.get("status", "UNSET"),
            status_message=line.get("status_message"),
            attributes=line.get("attributes", {}),
            events=tuple(
                RecordedEvent(e["name"], _datetime(e["time_unix_nano"]), e.get("attributes", {}))
                for e in line.get("events", ())
            ),
            links=tuple((link["trace_id"], link["span_id"]) for link in line.get("links", ())),
        )


class SpanFile(SpanExporter):
    """Writes a process's spans to ``<folder>/<service>.<process kind>.<pid>.jsonl``, one
    JSON object a line (a whole batch in one write, so a reader sees whole lines but for,
    at worst, the last one, which :func:`read_spans` skips)."""

    def __init__(self, folder: Path, resource: Resource) -> None:
        attributes = resource.attributes
        self.service = str(attributes.get("service.name", "unknown"))
        self.process_kind = attributes.get(PROCESS_KIND)
        self.pid = attributes.get("process.pid", os.getpid())
        folder.mkdir(parents=True, exist_ok=True)
        self.path = folder / f"{self.service}.{self.process_kind or 'process'}.{self.pid}.jsonl"
        self._lock = threading.Lock()

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        lines = "".join(json.dumps(self._line(span), default=str) + "\n" for span in spans)
        try:
            with self._lock, self.path.open("a", encoding="utf-8") as file:
                file.write(lines)
        except OSError:
            return SpanExportResult.FAILURE
        return SpanExportResult.SUCCESS

    def _line(self, span: ReadableSpan) -> dict[str, Any]:
        context = span.get_span_context()
        assert context is not None  # a finished SDK span always has one
        return {
            "trace_id": f"{context.trace_id:032x}",
            "span_id": f"{context.span_id:016x}",
            "parent_span_id": f"{span.parent.span_id:016x}" if span.parent else None,
            "name": span.name,
            "kind": span.kind.name,
            "service": self.service,
            "process_kind": self.process_kind,
            "pid": self.pid,
            "start_unix_nano": span.start_time,
            "end_unix_nano": span.end_time,
            "status": span.status.status_code.name,
            "status_message": span.status.description,
            "attributes": dict(span.attributes or {}),
            "events": [
                {
                    "name": event.name,
                    "time_unix_nano": event.timestamp,
                    "attributes": dict(event.attributes or {}),
                }
                for event in span.events
            ],
            "links": [
                {
                    "trace_id": f"{link.context.trace_id:032x}",
                    "span_id": f"{link.context.span_id:016x}",
                }
                for link in span.links
            ],
        }


def read_spans(
    file_dir: Path | str, *, trace_id: str | None = None, key: str | None = None
) -> list[RecordedSpan]:
    """The spans that the ``file`` exporter of every process wrote to ``file_dir``, oldest
    first: all of them, those of one trace (``trace_id``), or those of every trace that
    went through a message keyed ``key`` (an order's id: its checkout's trace, with the
    request that started it, and its payment's). Spans still buffered in a running process
    (up to 200 ms) are not there yet."""
    lines = [
        line
        for path in sorted(Path(file_dir).glob("*.jsonl"))
        for line in path.read_text(encoding="utf-8").splitlines()
    ]
    # Lines are picked by their text before any is parsed: a development folder holds the
    # spans of thousands of orders, and one order's are a few dozen.
    if trace_id is not None:
        lines = [line for line in lines if trace_id in line]
    if key is not None:
        written = json.dumps(key)[1:-1]  # as the key appears in a line, escapes and all
        traces = {
            span.trace_id
            for span in _parsed(line for line in lines if written in line)
            if span.attributes.get(MESSAGE_KEY) == key
        }
        lines = [line for line in lines if any(t in line for t in traces)]
    spans = _parsed(lines)
    if trace_id is not None:
        spans = [span for span in spans if span.trace_id == trace_id]
    if key is not None:
        spans = [span for span in spans if span.trace_id in traces]
    return sorted(spans, key=lambda span: span.start)


def _parsed(lines: Iterable[str]) -> list[RecordedSpan]:
    spans = []
    for line in lines:
        try:
            spans.append(RecordedSpan.from_json(json.loads(line)))
        except (ValueError, KeyError, TypeError):
            continue  # a line being written as we read
    return spans


def _datetime(unix_nano: int) -> datetime:
    return datetime.fromtimestamp(unix_nano / 1e9, UTC)
