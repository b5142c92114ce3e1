"""Traces across the processes, with OpenTelemetry: one trace per checkout, from the HTTP
request through the outbox row, the relay's publish and every handler it leads to.

The trace goes from process to process in one place, the message's W3C ``traceparent``
header, written and read by OpenTelemetry's propagator (:mod:`.propagation`): the outbox
row holds the context of the span it was written in (the request's, or the handler's);
the relay's PRODUCER span is its child and sends its own context in the header instead;
each consumer's CONSUMER span is a child of the header it received, and whatever a handler
adds to the outbox is a child of the handler's span (:mod:`.spans`). So a trace reads
request → send → process → send → process. The HTTP request's SERVER span is FastAPI's own
(:mod:`shop.web.tracing`); at a public API it starts the trace, whatever ``traceparent`` the
caller sent, and links the caller's span instead (:mod:`.edge`). The envelope's own
``traceparent`` field is no longer written nor read.

Tracing is on in a process once :func:`configure_tracing` has set its TracerProvider
(:mod:`.provider`); with the ``none`` exporter (the default) nothing is set and
OpenTelemetry's no-op tracer stays: the request path creates no span at all and the relay
skips its spans, while consumers still carry an incoming ``traceparent`` on to what they
publish and into their logs. The ``file`` exporter, for development and tests, is
shop.devstack's (``shop.devstack.spans``).
"""

from shop.messaging.tracing.attributes import (
    ATTEMPT,
    CONSUMER_GROUP,
    DEAD_LETTERED,
    DUPLICATE,
    MESSAGE_KEY,
    MESSAGE_TYPE,
    PROCESS_KIND,
    RETRY_DELAY,
    RETRY_SCHEDULED,
    SUBSCRIBER,
)
from shop.messaging.tracing.edge import EdgeTracerProvider
from shop.messaging.tracing.provider import (
    ExporterNotInstalled,
    ProcessKind,
    TracingSettings,
    configure_tracing,
    recording,
    tracer_provider,
)

__all__ = [
    "ATTEMPT",
    "CONSUMER_GROUP",
    "DEAD_LETTERED",
    "DUPLICATE",
    "MESSAGE_KEY",
    "MESSAGE_TYPE",
    "PROCESS_KIND",
    "RETRY_DELAY",
    "RETRY_SCHEDULED",
    "SUBSCRIBER",
    "EdgeTracerProvider",
    "ExporterNotInstalled",
    "ProcessKind",
    "TracingSettings",
    "configure_tracing",
    "recording",
    "tracer_provider",
]
