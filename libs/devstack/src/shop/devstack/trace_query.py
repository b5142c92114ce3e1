"""The tracing backend of ``make run``: Jaeger's HTTP query API, served over the span files
the shop's processes write (the ``file`` exporter, :mod:`shop.devstack.spans`), so that
shopctl and the console ask development for an order's spans exactly as they ask
production's Jaeger (``SHOP_OPS_TRACING_URL``, :mod:`shop.ops.traces`).

What it serves, as Jaeger's query service does (its UI's JSON API, the same in Jaeger v1 and
v2; see ``cmd/query/app/query_parser.go`` there for the parameters):

- ``GET /api/traces?service=…`` with ``tags`` (a JSON object), ``tag=key:value``,
  ``start`` and ``end`` (unix microseconds), ``limit``: the whole traces in which a span of
  ``service`` carries every tag and started in the window, newest first;
- ``GET /api/traces/{traceID}``: one trace;
- ``GET /api/services``: the services that wrote spans.

Each answer is ``{"data": …, "total", "limit", "offset", "errors"}``; a span is written as
Jaeger's OTLP translation writes it: kind and status as the tags ``span.kind`` and
``otel.status_code`` (with ``error``), each event as a log whose ``event`` field is its
name, the process kind and pid as its process's tags. Durations, operation names,
min/maxDuration are not filtered on: the shop's tools never ask.

    python -m shop.devstack.trace_query --port 16686 .devstack/traces
"""

from __future__ import annotations

import argparse
import contextlib
import json
import signal
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Final
from urllib.parse import parse_qs, urlsplit

from shop.devstack.spans import RecordedSpan, parsed_spans
from shop.messaging.tracing.attributes import PROCESS_KIND

DEFAULT_LIMIT: Final = 100
"""Traces in one answer when ``limit`` is not given (Jaeger's default)."""
DEFAULT_LOOKBACK: Final = timedelta(days=2)
"""How far back a search looks when ``start`` is not given."""


class BadQuery(ValueError):
    """A query Jaeger would refuse (its 400)."""


@dataclass(frozen=True, slots=True)
class TraceQuery:
    service: str
    tags: Mapping[str, str] = field(default_factory=dict)
    start: datetime | None = None
    end: datetime | None = None
    limit: int = DEFAULT_LIMIT

    @classmethod
    def from_params(cls, params: Mapping[str, list[str]]) -> TraceQuery:
        service = _one(params, "service")
        if not service:
            raise BadQuery("parameter 'service' is required")
        tags: dict[str, str] = {}
        for pair in params.get("tag", ()):
            key, colon, value = pair.partition(":")
            if not colon:
                raise BadQuery(f"malformed 'tag' parameter, expecting key:value, received: {pair}")
            tags[key] = value
        for document in params.get("tags", ()):
            try:
                given = json.loads(document)
            except ValueError as error:
                raise BadQuery(
                    f"malformed 'tags' parameter, cannot unmarshal JSON: {error}"
                ) from None
            if not isinstance(given, dict) or not all(isinstance(v, str) for v in given.values()):
                raise BadQuery("malformed 'tags' parameter: a JSON object of strings")
            tags.update(given)
        limit = _integer(params, "limit")
        return cls(
            service=service,
            tags=tags,
            start=_moment(_integer(params, "start")),
            end=_moment(_integer(params, "end")),
            limit=DEFAULT_LIMIT if limit is None else limit,
        )


class SpanFolder:
    """The span files of a folder, searched as Jaeger searches its store."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def find_traces(
        self, query: TraceQuery, *, now: datetime | None = None
    ) -> list[list[RecordedSpan]]:
        end = query.end or now or datetime.now(UTC)
        start = query.start or end - DEFAULT_LOOKBACK
        lines = self._lines()
        # Lines are picked by their text before any is parsed, as read_spans does: the
        # folder holds the spans of thousands of orders.
        candidates = lines
        for key, value in query.tags.items():
            if key not in _DERIVED_TAGS:
                written = json.dumps(value)[1:-1]
                candidates = [line for line in candidates if written in line]
        started: dict[str, datetime] = {}
        for span in parsed_spans(candidates):
            if (
                span.service == query.service
                and start <= span.start <= end
                and _matches(span, query.tags)
            ):
                started[span.trace_id] = max(span.start, started.get(span.trace_id, span.start))
        newest = sorted(started, key=lambda trace_id: started[trace_id], reverse=True)
        return self._traces(lines, newest[: query.limit] if query.limit > 0 else newest)

    def trace(self, trace_id: str) -> list[RecordedSpan]:
        found = self._traces(self._lines(), [trace_id.lower()])
        return found[0] if found else []

    def services(self) -> list[str]:
        return sorted({span.service for span in parsed_spans(self._lines())})

    def _lines(self) -> list[str]:
        return [
            line
            for path in sorted(self.folder.glob("*.jsonl"))
            for line in path.read_text(encoding="utf-8").splitlines()
        ]

    def _traces(self, lines: list[str], trace_ids: list[str]) -> list[list[RecordedSpan]]:
        wanted = set(trace_ids)
        by_trace: dict[str, list[RecordedSpan]] = {trace_id: [] for trace_id in trace_ids}
        for span in parsed_spans(line for line in lines if any(t in line for t in wanted)):
            if span.trace_id in wanted:
                by_trace[span.trace_id].append(span)
        return [sorted(spans, key=lambda s: s.start) for spans in by_trace.values() if spans]


# --- Jaeger's JSON -----------------------------------------------------------------------

_DERIVED_TAGS: Final = {"span.kind", "otel.status_code", "otel.status_description", "error"}


def jaeger_trace(spans: list[RecordedSpan]) -> dict[str, Any]:
    """One trace as Jaeger's query API writes it."""
    processes: dict[tuple[str, str | None, int | None], str] = {}
    for span in spans:
        processes.setdefault((span.service, span.process_kind, span.pid), f"p{len(processes) + 1}")
    return {
        "traceID": spans[0].trace_id,
        "spans": [
            _jaeger_span(span, processes[(span.service, span.process_kind, span.pid)])
            for span in spans
        ],
        "processes": {
            process_id: {
                "serviceName": service,
                "tags": _key_values(
                    {
                        **({PROCESS_KIND: kind} if kind is not None else {}),
                        **({"process.pid": pid} if pid is not None else {}),
                    }
                ),
            }
            for (service, kind, pid), process_id in processes.items()
        },
        "warnings": None,
    }


def _jaeger_span(span: RecordedSpan, process_id: str) -> dict[str, Any]:
    references = []
    if span.parent_span_id:
        references.append(
            {"refType": "CHILD_OF", "traceID": span.trace_id, "spanID": span.parent_span_id}
        )
    references += [
        {"refType": "FOLLOWS_FROM", "traceID": trace_id, "spanID": span_id}
        for trace_id, span_id in span.links
    ]
    return {
        "traceID": span.trace_id,
        "spanID": span.span_id,
        "flags": 1,
        "operationName": span.name,
        "references": references,
        "startTime": _micros(span.start),
        "duration": _micros(span.end) - _micros(span.start),
        "tags": _key_values({**span.attributes, **_derived_tags(span)}),
        "logs": [
            {
                "timestamp": _micros(event.at),
                "fields": _key_values({"event": event.name, **event.attributes}),
            }
            for event in span.events
        ],
        "processID": process_id,
        "warnings": None,
    }


def _derived_tags(span: RecordedSpan) -> dict[str, Any]:
    tags: dict[str, Any] = {"span.kind": span.kind.lower()}
    if span.status != "UNSET":
        tags["otel.status_code"] = span.status
    if span.status == "ERROR":
        tags["error"] = True
    if span.status_message:
        tags["otel.status_description"] = span.status_message
    return tags


def _matches(span: RecordedSpan, tags: Mapping[str, str]) -> bool:
    held = {**span.attributes, **_derived_tags(span)}
    return all(key in held and _text(held[key]) == value for key, value in tags.items())


def _key_values(values: Mapping[str, Any]) -> list[dict[str, Any]]:
    return [{"key": key, **_typed(value)} for key, value in values.items()]


def _typed(value: Any) -> dict[str, Any]:
    if isinstance(value, bool):
        return {"type": "bool", "value": value}
    if isinstance(value, int):
        return {"type": "int64", "value": value}
    if isinstance(value, float):
        return {"type": "float64", "value": value}
    if isinstance(value, str):
        return {"type": "string", "value": value}
    return {"type": "string", "value": json.dumps(value, default=str)}


def _text(value: Any) -> str:
    """A tag's value as a query names it (Jaeger compares tags as text)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return value if isinstance(value, str) else json.dumps(value, default=str)


def _micros(moment: datetime) -> int:
    return round(moment.timestamp() * 1_000_000)


def _moment(unix_micros: int | None) -> datetime | None:
    return None if unix_micros is None else datetime.fromtimestamp(unix_micros / 1e6, UTC)


def _one(params: Mapping[str, list[str]], name: str) -> str | None:
    values = params.get(name)
    return values[0] if values else None


def _integer(params: Mapping[str, list[str]], name: str) -> int | None:
    value = _one(params, name)
    if not value:
        return None
    try:
        return int(value)
    except ValueError:
        raise BadQuery(f"unable to parse param '{name}': {value!r} is not an integer") from None


# --- the server --------------------------------------------------------------------------


def _answer(data: Any, *, total: int = 0) -> dict[str, Any]:
    return {"data": data, "total": total, "limit": 0, "offset": 0, "errors": None}


def _refusal(status: HTTPStatus, message: str) -> dict[str, Any]:
    return {
        "data": None,
        "total": 0,
        "limit": 0,
        "offset": 0,
        "errors": [{"code": status.value, "msg": message}],
    }


def handler_for(spans: SpanFolder) -> type[BaseHTTPRequestHandler]:
    class JaegerQueryHandler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # the name http.server calls
            url = urlsplit(self.path)
            params = parse_qs(url.query)
            path = url.path.rstrip("/")
            try:
                if path == "/api/traces":
                    found = spans.find_traces(TraceQuery.from_params(params))
                    self._send(HTTPStatus.OK, _answer([jaeger_trace(t) for t in found]))
                elif path.startswith("/api/traces/"):
                    trace = spans.trace(path.removeprefix("/api/traces/"))
                    if trace:
                        self._send(HTTPStatus.OK, _answer([jaeger_trace(trace)], total=1))
                    else:
                        self._send(
                            HTTPStatus.NOT_FOUND, _refusal(HTTPStatus.NOT_FOUND, "trace not found")
                        )
                elif path == "/api/services":
                    names = spans.services()
                    self._send(HTTPStatus.OK, _answer(names, total=len(names)))
                else:
                    self._send(HTTPStatus.NOT_FOUND, _refusal(HTTPStatus.NOT_FOUND, "not found"))
            except BadQuery as error:
                self._send(HTTPStatus.BAD_REQUEST, _refusal(HTTPStatus.BAD_REQUEST, str(error)))

        def _send(self, status: HTTPStatus, body: Mapping[str, Any]) -> None:
            payload = json.dumps(body, default=str).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, format: str, *args: Any) -> None:
            pass  # every console page asks: its log would be nothing but these lines

    return JaegerQueryHandler


def server(folder: Path, *, host: str = "127.0.0.1", port: int = 0) -> ThreadingHTTPServer:
    """The query server over ``folder``, bound (``port`` 0: any free port), not yet serving."""
    httpd = ThreadingHTTPServer((host, port), handler_for(SpanFolder(folder)))
    httpd.daemon_threads = True
    return httpd


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m shop.devstack.trace_query",
        description="Jaeger's HTTP query API over a folder of span files.",
    )
    parser.add_argument("folder", type=Path, help="the span files' folder (.devstack/traces)")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=16686)
    options = parser.parse_args(argv)
    options.folder.mkdir(parents=True, exist_ok=True)
    # Stopped as make run stops its processes (SIGTERM), or with Ctrl-C: quietly, exit 0.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    with (
        server(options.folder, host=options.host, port=options.port) as httpd,
        contextlib.suppress(KeyboardInterrupt),
    ):
        httpd.serve_forever()


if __name__ == "__main__":
    main()
