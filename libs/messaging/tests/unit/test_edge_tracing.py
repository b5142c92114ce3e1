"""A public edge's tracer: a span whose parent came from another process starts a trace of
its own, sampled by the process's own decision, linked to the caller; a span whose parent is
in this process stays its child."""

from __future__ import annotations

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.sdk.trace.sampling import ParentBased, TraceIdRatioBased
from opentelemetry.trace import SpanKind

from shop.messaging.testing import recording_spans
from shop.messaging.tracing import EdgeTracerProvider
from shop.messaging.tracing.propagation import extract

pytestmark = pytest.mark.unit

CALLER_TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
CALLER_SPAN = "00f067aa0ba902b7"
SAMPLED_CALLER = f"00-{CALLER_TRACE}-{CALLER_SPAN}-01"


def process_provider(*, sample_ratio: float) -> tuple[TracerProvider, InMemorySpanExporter]:
    """A provider as ``configure_tracing`` makes one (a parent-based ratio sampler), keeping
    its spans in memory."""
    provider = TracerProvider(sampler=ParentBased(TraceIdRatioBased(sample_ratio)))
    exporter = InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return provider, exporter


def edge_request(edge: EdgeTracerProvider, traceparent: str) -> trace.Span:
    """A SERVER span as FastAPI starts it: the caller's context extracted by OpenTelemetry's
    propagator and given as the parent."""
    tracer = edge.get_tracer("fastapi")
    return tracer.start_span("POST /v1/orders", context=extract({"traceparent": traceparent}))


def test_a_callers_sampled_traceparent_is_linked_and_a_new_trace_begins() -> None:
    provider, exporter = process_provider(sample_ratio=1.0)

    edge_request(EdgeTracerProvider(provider), SAMPLED_CALLER).end()

    [span] = exporter.get_finished_spans()
    assert span.context is not None
    assert f"{span.context.trace_id:032x}" != CALLER_TRACE
    assert span.parent is None
    [link] = span.links
    assert (f"{link.context.trace_id:032x}", f"{link.context.span_id:016x}") == (
        CALLER_TRACE,
        CALLER_SPAN,
    )
    assert link.context.is_remote


def test_a_callers_sampled_flag_does_not_force_recording() -> None:
    provider, exporter = process_provider(sample_ratio=0.0)

    span = edge_request(EdgeTracerProvider(provider), SAMPLED_CALLER)
    span.end()

    assert not span.is_recording()
    assert not span.get_span_context().trace_flags.sampled
    assert f"{span.get_span_context().trace_id:032x}" != CALLER_TRACE
    assert exporter.get_finished_spans() == ()


def test_a_span_whose_parent_is_in_this_process_stays_its_child() -> None:
    provider, exporter = process_provider(sample_ratio=1.0)
    tracer = EdgeTracerProvider(provider).get_tracer("fastapi")

    with (
        tracer.start_as_current_span("POST /v1/orders", kind=SpanKind.SERVER) as request,
        tracer.start_as_current_span("fastapi.endpoint"),
    ):
        pass

    finished = {span.name: span for span in exporter.get_finished_spans()}
    operation = finished["fastapi.endpoint"]
    assert operation.parent is not None
    assert operation.parent.span_id == request.get_span_context().span_id
    assert not operation.links
    assert finished["POST /v1/orders"].parent is None


def test_a_request_without_a_traceparent_starts_a_trace_with_no_link() -> None:
    provider, exporter = process_provider(sample_ratio=1.0)

    edge_request(EdgeTracerProvider(provider), "not a traceparent").end()

    [span] = exporter.get_finished_spans()
    assert span.parent is None
    assert not span.links


def test_by_default_spans_go_to_the_provider_the_process_has_when_they_start() -> None:
    edge = EdgeTracerProvider()
    untraced = edge_request(edge, SAMPLED_CALLER)
    # No provider yet: no span, and nothing of the caller's either.
    assert not untraced.get_span_context().is_valid

    spans = recording_spans()
    edge_request(edge, SAMPLED_CALLER).end()

    [span] = spans.get_finished_spans()
    assert isinstance(span, ReadableSpan)
    assert [f"{link.context.trace_id:032x}" for link in span.links] == [CALLER_TRACE]
