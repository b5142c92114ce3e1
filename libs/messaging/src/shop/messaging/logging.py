"""Structured JSON logs for workers and APIs: one line per event, with the message's ids
bound and the current span's ``trace_id`` and ``span_id``."""

from __future__ import annotations

import logging
import sys
from collections.abc import MutableMapping
from typing import Any

import structlog
from opentelemetry import trace

from shop.messaging import privacy

_NOT_ADDRESSES = frozenset({"message_id"})
"""Fields shaped like an address that are not one: an e-mail's Message-ID must stay whole,
to find a duplicate by it."""


def mask_emails(_: Any, __: str, event: MutableMapping[str, Any]) -> MutableMapping[str, Any]:
    """Customers' addresses never reach the logs whole: ``budi@example.com`` becomes
    ``b***@example.com`` (:func:`shop.messaging.privacy.mask_emails`)."""
    for name, value in event.items():
        if isinstance(value, str) and "@" in value and name not in _NOT_ADDRESSES:
            event[name] = privacy.mask_emails(value)
    return event


def trace_ids() -> dict[str, str | None]:
    """``trace_id`` and ``span_id`` of the current span, to bind to a logger (None outside
    any trace)."""
    context = trace.get_current_span().get_span_context()
    if not context.is_valid:
        return {"trace_id": None, "span_id": None}
    return {"trace_id": f"{context.trace_id:032x}", "span_id": f"{context.span_id:016x}"}


def add_trace_ids(_: Any, __: str, event: MutableMapping[str, Any]) -> MutableMapping[str, Any]:
    """``trace_id`` and ``span_id`` of the span current where the line is logged (the
    request's, the handler's, the e-mail's), so that a line leads to its trace. Outside any
    trace the line keeps what was bound, if anything."""
    ids = trace_ids()
    if ids["trace_id"] is not None:
        event.update(ids)
    return event


def configure_logging(*, level: str = "INFO", json: bool = True) -> None:
    """JSON lines on stdout (or readable text for a developer's terminal)."""
    renderer: Any = structlog.processors.JSONRenderer() if json else structlog.dev.ConsoleRenderer()
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            add_trace_ids,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            structlog.processors.format_exc_info,
            mask_emails,
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(logging.getLevelName(level)),
        logger_factory=structlog.PrintLoggerFactory(sys.stdout),
        cache_logger_on_first_use=True,
    )
