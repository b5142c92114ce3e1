"""One order's traces, as the shop's processes wrote them to the trace folder
(``SHOP_OPS_TRACE_DIR``: ``make run``'s ``.devstack/traces``, the ``file`` exporter of
:mod:`shop.messaging.tracing`): each trace that went through a message about the order
(its checkout's, its payment's), span by span, in the order of the call tree."""

from __future__ import annotations

import asyncio
import uuid
from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

from shop.ops.errors import OpsError
from shop.ops.settings import OpsSettings

if TYPE_CHECKING:  # the span file is development's: the image has no shop.devstack
    from shop.devstack.spans import RecordedSpan


@dataclass(frozen=True, slots=True)
class TracedStep:
    span: RecordedSpan
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
    """The traces of the order ``order_id``, oldest first; None when no trace folder is
    configured or there is none (the shop does not trace to files there)."""
    spans = await order_spans(settings, order_id)
    return None if spans is None else as_traces(spans)


async def order_spans(settings: OpsSettings, order_id: uuid.UUID) -> list[RecordedSpan] | None:
    """Every span of the traces that went through a message about ``order_id``; None as
    for :func:`order_traces`. Read in a thread: the folder may hold many megabytes."""
    folder = settings.trace_dir
    if folder is None or not folder.is_dir():
        return None
    from shop.devstack.spans import read_spans  # noqa: PLC0415  # only where spans go to files

    try:
        return await asyncio.to_thread(read_spans, folder, key=str(order_id))
    except OSError as error:
        raise OpsError(f"cannot read the traces in {folder}: {error.strerror or error}") from error


def as_traces(spans: list[RecordedSpan]) -> list[OrderTrace]:
    """``spans`` grouped by trace, each trace in call-tree order (a parent before its
    children, siblings by start)."""
    by_trace: dict[str, list[RecordedSpan]] = defaultdict(list)
    for span in spans:
        by_trace[span.trace_id].append(span)
    traces = [_trace(trace_id, members) for trace_id, members in by_trace.items()]
    return sorted(traces, key=lambda trace: trace.started)


def _trace(trace_id: str, spans: list[RecordedSpan]) -> OrderTrace:
    ids = {span.span_id for span in spans}
    children: dict[str | None, list[RecordedSpan]] = defaultdict(list)
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
