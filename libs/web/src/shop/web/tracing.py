"""A SERVER span per HTTP request, from FastAPI's own OpenTelemetry support.

FastAPI makes the span when the process has a TracerProvider (``configure_tracing`` in
``shop.messaging.tracing`` sets one; with the ``none`` exporter there is none, and a request
costs nothing more), or when the app gives it one. By itself it continues a ``traceparent``
the caller sent; the shop's public APIs give it ``shop.messaging.tracing.EdgeTracerProvider``,
which starts a trace of their own and links the caller's instead. It names the span by the
route template (``POST /v1/orders``), and keeps it current while the route runs: an event
the route adds to the outbox carries the request's trace on.
"""

from __future__ import annotations

from collections.abc import MutableMapping
from typing import Any, Final

from fastapi.telemetry import TelemetryConfig
from opentelemetry import trace

UNTRACED_PATHS: Final = frozenset({"/healthz", "/readyz", "/metrics"})
"""Probes and scrapes: a span each would bury the requests that matter."""


def _untraced(scope: MutableMapping[str, Any]) -> bool:
    # Also every request while the process has no TracerProvider: an app that gives FastAPI
    # a provider of its own would otherwise have it do its per-request work for a span that
    # records nothing.
    return scope.get("path") in UNTRACED_PATHS or isinstance(
        trace.get_tracer_provider(), trace.ProxyTracerProvider
    )


def request_telemetry() -> TelemetryConfig:
    """``FastAPI(telemetry=…)`` for a service's API: one span per request (no spans for
    dependency resolution and serialisation), and neither OpenTelemetry metrics nor logs,
    which ``shop.web.metrics`` and the JSON logs already give."""
    return {
        "tracing": True,
        "operation_spans": False,
        "metrics": False,
        "logs": False,
        # Only the service's tracing settings turn exporting on, never the environment.
        "auto_configure": False,
        "exclude": _untraced,
    }
