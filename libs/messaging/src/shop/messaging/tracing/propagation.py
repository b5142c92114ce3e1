"""Trace context in a message's headers, as W3C Trace Context: a ``traceparent`` header
(and ``tracestate``, when the trace has one), written and read by OpenTelemetry's own
propagator. The header is the only trace context a message carries: the outbox row holds
its writer's, and the relay replaces it with its PRODUCER span's as it sends the message.
"""

from __future__ import annotations

from collections.abc import Mapping, MutableMapping
from typing import Final

from opentelemetry.context import Context
from opentelemetry.propagators.textmap import Getter, Setter
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

W3C_TRACE_CONTEXT: Final = TraceContextTextMapPropagator()
"""Not the global propagator of ``opentelemetry.propagate``, which ``OTEL_PROPAGATORS``
may change: the bus's documents promise consumers a ``traceparent`` header (AsyncAPI), so
its format is the shop's to choose, not the environment's."""


class _HeaderGetter(Getter[Mapping[str, str]]):
    """Reads a message's headers: one string value per name, on every transport."""

    def get(self, carrier: Mapping[str, str], key: str) -> list[str] | None:
        value = carrier.get(key)
        return None if value is None else [value]

    def keys(self, carrier: Mapping[str, str]) -> list[str]:
        return list(carrier)


class _HeaderSetter(Setter[MutableMapping[str, str]]):
    def set(self, carrier: MutableMapping[str, str], key: str, value: str) -> None:
        carrier[key] = value


_GETTER: Final = _HeaderGetter()
_SETTER: Final = _HeaderSetter()


def inject(headers: MutableMapping[str, str], context: Context | None = None) -> None:
    """Write the trace context of ``context`` (by default the current one: the request's
    span, the handler's) into ``headers``, in place of any written before; outside any
    trace, remove it."""
    for name in W3C_TRACE_CONTEXT.fields:
        headers.pop(name, None)
    W3C_TRACE_CONTEXT.inject(headers, context, setter=_SETTER)


def extract(headers: Mapping[str, str]) -> Context:
    """The context of which a span for a message with ``headers`` is a child: the remote
    span its ``traceparent`` names; an empty context, so a trace of its own, when it has no
    ``traceparent`` or a malformed one."""
    return W3C_TRACE_CONTEXT.extract(headers, getter=_GETTER)
