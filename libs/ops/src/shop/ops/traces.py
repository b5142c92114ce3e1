"""One order's traces, asked of the tracing backend (``SHOP_OPS_TRACING_URL``): each trace
that went through a message about the order (its checkout's, its payment's), span by span,
in the order of the call tree.

The backend is asked through Jaeger's HTTP query API, the JSON one its UI reads
(``GET /api/traces`` and its ``data`` of traces, served by Jaeger v1 and v2 on the query
port, 16686, and by Jaeger-compatible stores such as VictoriaTraces): the shop's processes
export OTLP to a collector, which writes to Jaeger. ``make run`` serves the same API over
its span files (``shop.devstack.trace_query``), so development reads spans as production
does. The spans are as Jaeger's OTLP translation leaves them: the kind and the status are
tags (``span.kind``, ``otel.status_code``), an event is a log whose ``event`` field is its
name, the resource's attributes are the process's tags.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, Final

import httpx

from shop.messaging.tracing import MESSAGE_KEY, PROCESS_KIND
from shop.ops.errors import OpsError
from shop.ops.http import TIMEOUT, reaching
from shop.ops.settings import NOTIFICATION_SERVICE, ORDER_SERVICE, PAYMENT_SERVICE, OpsSettings

TRACES_PATH: Final = "/api/traces"
SERVICES: Final = (ORDER_SERVICE, PAYMENT_SERVICE, NOTIFICATION_SERVICE)
"""Jaeger searches one service's spans at a time: a trace about the order is found through
whichever of them carries the order's key."""
LOOKBACK: Final = timedelta(days=7)
"""How far back an order's traces are searched: as long as the services keep the outbox rows
the timeline's other entries come from."""
MAX_TRACES: Final = 100
"""Traces asked of each service (Jaeger's own default): an order has a handful."""

# Jaeger's names for what OTLP holds in fields of their own.
SPAN_KIND_TAG: Final = "span.kind"
STATUS_CODE_TAG: Final = "otel.status_code"
STATUS_DESCRIPTION_TAG: Final = "otel.status_description"
EVENT_NAME_FIELD: Final = "event"
PROCESS_PID_TAG: Final = "process.pid"
_NOT_ATTRIBUTES: Final = {SPAN_KIND_TAG, STATUS_CODE_TAG, STATUS_DESCRIPTION_TAG, "error"}


@dataclass(frozen=True, slots=True)
class SpanEvent:
    name: str
    at: datetime
    attributes: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class Span:
    """One span as the tracing backend holds it. Ids are lowercase hex (32 and 16 digits),
    as in a ``traceparent``; ``kind`` is ``SERVER``, ``CLIENT``, ``PRODUCER``,
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
    events: tuple[SpanEvent, ...] = field(default=())

    @property
    def seconds(self) -> float:
        return (self.end - self.start).total_seconds()


@dataclass(frozen=True, slots=True)
class TracedStep:
    span: Span
    depth: int
    """How deep in the call tree: 0 for a span whose parent is not in the trace."""
    offset_seconds: float
    """When it started, after the trace's first span."""


@dataclass(frozen=True, slots=True)
class OrderTrace:
    trace_id: str
    started: datetime
    steps: tuple[TracedStep, ...]

    @property
    def processes(self) -> int:
        return len({(step.span.service, step.span.pid) for step in self.steps})


async def order_traces(settings: OpsSettings, order_id: uuid.UUID) -> list[OrderTrace] | None:
    """The traces of the order ``order_id``, oldest first; None when no tracing backend is
    configured (``SHOP_OPS_TRACING_URL`` unset)."""
    spans = await order_spans(settings, order_id)
    return None if spans is None else as_traces(spans)


async def order_spans(settings: OpsSettings, order_id: uuid.UUID) -> list[Span] | None:
    """Every span of the traces that went through a message about ``order_id``, oldest
    first; None as for :func:`order_traces`. :class:`OpsError` when the backend cannot be
    reached or refuses."""
    if settings.tracing_url is None:
        return None
    async with httpx.AsyncClient(base_url=settings.tracing_url, timeout=TIMEOUT) as client:
        return await TracingBackend(client, settings.tracing_url).spans_with_key(str(order_id))


class TracingBackend:
    """Jaeger's HTTP query API (``/api/traces``, the JSON of its ``data``) at ``url``."""

    def __init__(self, client: httpx.AsyncClient, url: str) -> None:
        self.client = client
        self.url = url

    async def spans_with_key(self, key: str, *, now: datetime | None = None) -> list[Span]:
        """The spans of every trace in which a span carries ``shop.message.key=key``."""
        end = now or datetime.now(UTC)
        params = {
            "tags": json.dumps({MESSAGE_KEY: key}),
            "start": str(_micros(end - LOOKBACK)),
            "end": str(_micros(end)),
            "limit": str(MAX_TRACES),
        }
        found = await asyncio.gather(
            *(self._traces({**params, "service": service}) for service in SERVICES)
        )
        spans: dict[tuple[str, str], Span] = {}
        for traces in found:
            for trace in traces:
                for span in jaeger_spans(trace):
                    spans[(span.trace_id, span.span_id)] = span
        return sorted(spans.values(), key=lambda span: span.start)

    async def _traces(self, params: Mapping[str, str]) -> list[dict[str, Any]]:
        with reaching("the tracing backend", self.url):
            reply = await self.client.get(TRACES_PATH, params=params)
        try:
            body = reply.json()
        except ValueError:
            body = None
        if reply.status_code != 200 or not isinstance(body, dict):
            raise OpsError(
                f"the tracing backend at {self.url} answered {reply.status_code}: "
                f"{_errors(body) or reply.text[:300]}"
            )
        traces: list[dict[str, Any]] = body.get("data") or []
        return traces


def jaeger_spans(trace: Mapping[str, Any]) -> list[Span]:
    """The spans of one trace of Jaeger's JSON (``{"traceID", "spans", "processes"}``)."""
    processes = trace.get("processes") or {}
    return [_span(span, processes.get(span.get("processID"), {})) for span in trace["spans"]]


def _span(span: Mapping[str, Any], process: Mapping[str, Any]) -> Span:
    tags = _values(span.get("tags"))
    process_tags = _values(process.get("tags"))
    parent = next(
        (
            ref["spanID"]
            for ref in span.get("references") or ()
            if ref.get("refType") == "CHILD_OF" and ref.get("traceID") == span["traceID"]
        ),
        None,
    )
    start = _datetime(span["startTime"])
    pid = process_tags.get(PROCESS_PID_TAG)
    return Span(
        trace_id=span["traceID"],
        span_id=span["spanID"],
        parent_span_id=parent,
        name=span["operationName"],
        kind=str(tags.get(SPAN_KIND_TAG, "internal")).upper(),
        service=process.get("serviceName", "unknown"),
        process_kind=process_tags.get(PROCESS_KIND),
        pid=int(pid) if pid is not None else None,
        start=start,
        end=start + timedelta(microseconds=span.get("duration", 0)),
        status=str(tags.get(STATUS_CODE_TAG, "UNSET")),
        status_message=tags.get(STATUS_DESCRIPTION_TAG),
        attributes={k: v for k, v in tags.items() if k not in _NOT_ATTRIBUTES},
        events=tuple(_event(log) for log in span.get("logs") or ()),
    )


def _event(log: Mapping[str, Any]) -> SpanEvent:
    fields = _values(log.get("fields"))
    name = str(fields.pop(EVENT_NAME_FIELD, "event"))
    return SpanEvent(name=name, at=_datetime(log["timestamp"]), attributes=fields)


def _values(tags: Iterable[Mapping[str, Any]] | None) -> dict[str, Any]:
    return {tag["key"]: tag.get("value") for tag in tags or ()}


def _errors(body: object) -> str:
    if isinstance(body, dict) and body.get("errors"):
        return "; ".join(str(error.get("msg", error)) for error in body["errors"])
    return ""


def _micros(moment: datetime) -> int:
    return int(moment.timestamp() * 1_000_000)


def _datetime(unix_micros: int) -> datetime:
    return datetime.fromtimestamp(unix_micros / 1e6, UTC)


def as_traces(spans: list[Span]) -> list[OrderTrace]:
    """``spans`` grouped by trace, each trace in call-tree order (a parent before its
    children, siblings by start)."""
    by_trace: dict[str, list[Span]] = defaultdict(list)
    for span in spans:
        by_trace[span.trace_id].append(span)
    traces = [_trace(trace_id, members) for trace_id, members in by_trace.items()]
    return sorted(traces, key=lambda trace: trace.started)


def _trace(trace_id: str, spans: list[Span]) -> OrderTrace:
    ids = {span.span_id for span in spans}
    children: dict[str | None, list[Span]] = defaultdict(list)
    for span in spans:
        parent = span.parent_span_id if span.parent_span_id in ids else None
        children[parent].append(span)
    started = min(span.start for span in spans)
    steps: list[TracedStep] = []

    def visit(parent: str | None, depth: int) -> None:
        for span in sorted(children[parent], key=lambda s: s.start):
            steps.append(TracedStep(span, depth, (span.start - started).total_seconds()))
            visit(span.span_id, depth + 1)

    visit(None, 0)
    return OrderTrace(trace_id=trace_id, started=started, steps=tuple(steps))
