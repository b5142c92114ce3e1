"""Public edges start their own traces, and link the caller's.

A request from outside the shop (a browser, a frontend, a payment gateway) may carry a
``traceparent``. Continued, it would let anyone choose the trace id that then travels into
the outbox, every message of the order and every log line about it, and force its recording
with the sampled flag, which a parent-based sampler obeys. So a public API's SERVER span is
the root of a trace of its own instead: a new trace id, recorded or not as the process's own
sampler decides for a new trace (``TracingSettings.sample_ratio``), with the caller's span
context as a span Link, so that whoever holds the caller's trace can still find the shop's.

The rule sits in a TracerProvider handed to FastAPI's telemetry
(``FastAPI(telemetry={"tracer_provider": EdgeTracerProvider(), …})``): FastAPI extracts the
caller's context with OpenTelemetry's propagator, as always, and asks this provider's tracer
for the SERVER span with that context as its parent; the tracer starts a root linked to it.
Only a parent from another process (a remote span context) is replaced: spans whose parent
is in this process stay its children. Inside the shop, traces are continued as before: the
relay and the consumers read the ``traceparent`` of the messages the shop wrote itself
(:mod:`.propagation`).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.trace import Link, Span, SpanKind
from opentelemetry.util.types import Attributes


class EdgeTracerProvider(trace.TracerProvider):
    """Tracers that start a span whose parent came from outside the process as the root of
    a new trace linked to that parent. Spans go to ``provider``; by default, to the
    process's provider at the moment each span starts (tracing may be configured, or a test
    may record spans, after the app was built), and to none while the process has none."""

    def __init__(self, provider: trace.TracerProvider | None = None) -> None:
        self._provider = provider

    def get_tracer(
        self,
        instrumenting_module_name: str,
        instrumenting_library_version: str | None = None,
        schema_url: str | None = None,
        attributes: Attributes = None,
    ) -> trace.Tracer:
        return _EdgeTracer(
            self._provider,
            (instrumenting_module_name, instrumenting_library_version, schema_url, attributes),
        )


_Scope = tuple[str, str | None, str | None, Attributes]


class _EdgeTracer(trace.Tracer):
    def __init__(self, provider: trace.TracerProvider | None, scope: _Scope) -> None:
        self._provider = provider
        self._scope = scope
        self._kept: tuple[trace.TracerProvider, trace.Tracer] | None = None

    def _tracer(self) -> trace.Tracer:
        # Kept with its provider: a test may replace the process's provider.
        provider = self._provider or trace.get_tracer_provider()
        if self._kept is None or self._kept[0] is not provider:
            self._kept = (provider, provider.get_tracer(*self._scope))
        return self._kept[1]

    def start_span(  # noqa: PLR0917 - OpenTelemetry's Tracer signature, positional and all
        self,
        name: str,
        context: Context | None = None,
        kind: SpanKind = SpanKind.INTERNAL,
        attributes: Attributes = None,
        links: Sequence[Link] | None = None,
        start_time: int | None = None,
        record_exception: bool = True,
        set_status_on_exception: bool = True,
    ) -> Span:
        caller = trace.get_current_span(context).get_span_context()
        if caller.is_valid and caller.is_remote:
            # No parent: a new trace id, and the decision the sampler makes for a new trace.
            context = Context()
            links = [*(links or ()), Link(caller)]
        return self._tracer().start_span(
            name,
            context=context,
            kind=kind,
            attributes=attributes,
            links=links,
            start_time=start_time,
            record_exception=record_exception,
            set_status_on_exception=set_status_on_exception,
        )

    # OpenTelemetry's Tracer signature, positional parameters and all. The base class
    # declares the return type of its private decorator; a plain context manager is what
    # callers get (OpenTelemetry's own ProxyTracer ignores the difference alike).
    @contextmanager
    def start_as_current_span(  # type: ignore[override]  # noqa: PLR0917
        self,
        name: str,
        context: Context | None = None,
        kind: SpanKind = SpanKind.INTERNAL,
        attributes: Attributes = None,
        links: Sequence[Link] | None = None,
        start_time: int | None = None,
        record_exception: bool = True,
        set_status_on_exception: bool = True,
        end_on_exit: bool = True,
    ) -> Iterator[Span]:
        span = self.start_span(
            name,
            context=context,
            kind=kind,
            attributes=attributes,
            links=links,
            start_time=start_time,
            record_exception=record_exception,
            set_status_on_exception=set_status_on_exception,
        )
        with trace.use_span(
            span,
            end_on_exit=end_on_exit,
            record_exception=record_exception,
            set_status_on_exception=set_status_on_exception,
        ) as current:
            yield current
