"""The ``file`` span exporter, for development and tests: each process writes its spans as
JSON lines to a file of its own, and :func:`read_spans` reads them back, of all processes
at once (the e2e tests, and the ops console's order page under ``make run``).

A service's ``TracingSettings(exporter="file", file_dir=…)`` finds :class:`SpanFile`
through the ``shop.span_exporters`` entry point this package declares: the services never
import it, and the shop's image, which does not carry this package, refuses the setting.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

from shop.messaging.tracing.attributes import MESSAGE_KEY, PROCESS_KIND


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
    """``(trace_id, span_id)`` of each span it links to (a public API's request span links
    its caller's; the shop's other spans have none)."""

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
            for span in parsed_spans(line for line in lines if written in line)
            if span.attributes.get(MESSAGE_KEY) == key
        }
        lines = [line for line in lines if any(t in line for t in traces)]
    spans = parsed_spans(lines)
    if trace_id is not None:
        spans = [span for span in spans if span.trace_id == trace_id]
    if key is not None:
        spans = [span for span in spans if span.trace_id in traces]
    return sorted(spans, key=lambda span: span.start)


def parsed_spans(lines: Iterable[str]) -> list[RecordedSpan]:
    """The spans of the ``file`` exporter's ``lines``; a line being written is skipped."""
    spans = []
    for line in lines:
        try:
            spans.append(RecordedSpan.from_json(json.loads(line)))
        except (ValueError, KeyError, TypeError):
            continue  # a line being written as we read
    return spans


def _datetime(unix_nano: int) -> datetime:
    return datetime.fromtimestamp(unix_nano / 1e9, UTC)
