"""A process's TracerProvider: where its spans go, as its service's settings say.

Tracing is on in a process once :func:`configure_tracing` has set its TracerProvider; with
the ``none`` exporter (the default) nothing is set and OpenTelemetry's no-op tracer stays.
"""

from __future__ import annotations

import os
from importlib.metadata import entry_points
from pathlib import Path
from typing import Final, Literal, Protocol, Self

from opentelemetry import trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import (
    BatchSpanProcessor,
    ConsoleSpanExporter,
    SimpleSpanProcessor,
    SpanExporter,
)
from opentelemetry.sdk.trace.sampling import ParentBased, TraceIdRatioBased
from pydantic import BaseModel, Field, model_validator

from shop.messaging.tracing.attributes import PROCESS_KIND

ProcessKind = Literal["api", "worker", "relay"]

SPAN_EXPORTERS: Final = "shop.span_exporters"
"""Entry point group of exporters this library does not ship, by exporter name: the
``file`` exporter is shop.devstack's (``shop.devstack.spans:SpanFile``)."""


class TracingSettings(BaseModel):
    """Where a process's spans go. Each service's settings hold one (``SHOP_<SERVICE>_
    TRACING__EXPORTER`` …); off by default."""

    exporter: Literal["none", "otlp", "console", "file"] = "none"
    """``none``: no spans at all (no cost); ``otlp``: OTLP over HTTP to ``otlp_endpoint``
    (the standard ``OTEL_EXPORTER_OTLP_*`` variables add headers or certificates);
    ``console``: printed on stdout; ``file``: JSON lines in ``file_dir``, for development
    and tests (shop.devstack's exporter: refused where shop.devstack is not installed)."""
    otlp_endpoint: str = "http://127.0.0.1:4318/v1/traces"
    service_name: str | None = None
    """``service.name`` of the spans; by default the service's own (``order-service``)."""
    file_dir: Path | None = None
    """The ``file`` exporter's folder: one ``<service>.<process kind>.<pid>.jsonl`` file
    per process, read back by ``shop.devstack.spans.read_spans``."""
    sample_ratio: float = Field(default=1.0, ge=0, le=1)
    """Share of new traces recorded; a trace that came with a message keeps the decision its
    parent made, so a trace is recorded whole or not at all. A public API's request always
    starts a new trace (:mod:`.edge`): a caller's sampled flag decides nothing."""

    @model_validator(mode="after")
    def file_needs_a_folder(self) -> Self:
        if self.exporter == "file" and self.file_dir is None:
            raise ValueError("the file exporter needs file_dir (TRACING__FILE_DIR)")
        return self

    @property
    def enabled(self) -> bool:
        return self.exporter != "none"


class FolderExporter(Protocol):
    """How an exporter of :data:`SPAN_EXPORTERS` is made: from its folder and the resource
    of the process whose spans it writes."""

    def __call__(self, folder: Path, resource: Resource) -> SpanExporter: ...


class ExporterNotInstalled(RuntimeError):
    """The settings name an exporter whose package this environment does not have."""


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
    exporter = _installed_exporter("file")(settings.file_dir, resource)
    # A short delay: a developer (or a test) reads one order's trace a moment after it ends.
    return BatchSpanProcessor(exporter, schedule_delay_millis=200)


def _installed_exporter(name: str) -> FolderExporter:
    # The span file is for development and tests, so it lives in shop.devstack, which the
    # shop's image does not carry; the services' code never imports it. shop.devstack
    # registers it under an entry point instead (as the services register their AsyncAPI
    # documents): make run and the tests find it, and a production process told to write
    # spans to files refuses at start-up, with this message, rather than at its first span.
    found = entry_points(group=SPAN_EXPORTERS, name=name)
    if not found:
        raise ExporterNotInstalled(
            f"the {name!r} span exporter is not installed here: it is shop-devstack's, for "
            "development and tests; use otlp or console"
        )
    exporter: FolderExporter = next(iter(found)).load()
    return exporter


def recording() -> bool:
    """Whether this process has a TracerProvider (else spans cost nothing and record
    nothing, and the relay makes none)."""
    return not isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider)


_kept: tuple[trace.TracerProvider, trace.Tracer] | None = None


def messaging_tracer() -> trace.Tracer:
    """The tracer of the messaging spans, from the provider in use."""
    # Kept with its provider: a test may replace the provider (shop.messaging.testing), and
    # a kept ProxyTracer would stay with the first.
    global _kept  # noqa: PLW0603  # one provider in use per process
    provider = trace.get_tracer_provider()
    if _kept is None or _kept[0] is not provider:
        _kept = (provider, provider.get_tracer("shop.messaging"))
    return _kept[1]
