"""Structured JSON logs for workers: one line per event, with the message's ids bound."""

from __future__ import annotations

import logging
import re
import sys
from collections.abc import MutableMapping
from typing import Any

import structlog

_EMAIL = re.compile(r"(?P<first>[^@\s\"']{1,2})[^@\s\"']*@(?P<domain>[^\s\"']+)")
_NOT_ADDRESSES = frozenset({"message_id"})
"""Fields shaped like an address that are not one: an e-mail's Message-ID must stay whole,
to find a duplicate by it."""


def mask_emails(_: Any, __: str, event: MutableMapping[str, Any]) -> MutableMapping[str, Any]:
    """Customers' addresses never reach the logs whole: ``budi@example.com`` becomes
    ``bu***@example.com``."""
    for name, value in event.items():
        if isinstance(value, str) and "@" in value and name not in _NOT_ADDRESSES:
            event[name] = _EMAIL.sub(r"\g<first>***@\g<domain>", value)
    return event


def configure_logging(*, level: str = "INFO", json: bool = True) -> None:
    """JSON lines on stdout (or readable text for a developer's terminal)."""
    renderer: Any = structlog.processors.JSONRenderer() if json else structlog.dev.ConsoleRenderer()
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            structlog.processors.format_exc_info,
            mask_emails,
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(logging.getLevelName(level)),
        logger_factory=structlog.PrintLoggerFactory(sys.stdout),
        cache_logger_on_first_use=True,
    )
