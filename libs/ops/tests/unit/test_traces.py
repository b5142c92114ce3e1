"""One order's spans, made into traces in call order, and the failed tries the timeline
reads from them."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from shop.devstack.spans import RecordedEvent, RecordedSpan
from shop.ops.timeline import traced_tries
from shop.ops.traces import as_traces

pytestmark = pytest.mark.unit

NOW = datetime(2026, 3, 14, 9, 30, tzinfo=UTC)


def span(span_id: str, parent: str | None, at: float, **fields: Any) -> RecordedSpan:
    start = NOW + timedelta(seconds=at)
    defaults: dict[str, Any] = {
        "trace_id": "ab" * 16,
        "span_id": span_id,
        "parent_span_id": parent,
        "name": span_id,
        "kind": "INTERNAL",
        "service": "order-service",
        "process_kind": "api",
        "pid": 1,
        "start": start,
        "end": start + timedelta(seconds=0.1),
        "status": "UNSET",
        "status_message": None,
        "attributes": {},
    }
    return RecordedSpan(**{**defaults, **fields})


def test_each_trace_lists_a_parent_before_its_children_and_siblings_by_start() -> None:
    spans = [
        span("late-child", "root", 3),
        span("root", None, 0),
        span("grandchild", "early-child", 2),
        span("early-child", "root", 1),
        span("orphan", "not-in-the-folder", 0.5),
        span("other-root", None, 10, trace_id="cd" * 16),
    ]

    first, second = as_traces(spans)

    assert [(s.span.span_id, s.depth) for s in first.steps] == [
        ("root", 0),
        ("early-child", 1),
        ("grandchild", 2),
        ("late-child", 1),
        ("orphan", 0),  # its parent is not in the folder: a root of its own
    ]
    assert first.steps[1].offset_seconds == pytest.approx(1.0)
    assert [s.span.span_id for s in second.steps] == ["other-root"]


def test_a_retried_try_and_a_repeated_delivery_become_timeline_entries() -> None:
    retried = span(
        "consumer",
        "send",
        1,
        kind="CONSUMER",
        service="notification-service",
        attributes={
            "shop.message.type": "order.created",
            "shop.subscriber": "notification-service:send_confirmation",
        },
        events=(
            RecordedEvent(
                "retry scheduled",
                NOW + timedelta(seconds=1.1),
                {
                    "exception.type": "SMTPServerDisconnected",
                    "shop.message.attempt": 1,
                    "shop.retry.delay_seconds": 2.04,
                },
            ),
        ),
    )
    again = span(
        "again",
        "send",
        5,
        kind="CONSUMER",
        service="payment-service",
        attributes={
            "shop.message.type": "order.created",
            "messaging.consumer.group.name": "payment-service",
            "shop.message.duplicate": True,
        },
    )
    handled = span("ok", "send", 2, kind="CONSUMER")

    entries = traced_tries([retried, again, handled, span("request", None, 0, kind="SERVER")])

    assert [(e.service, e.what, e.detail) for e in entries] == [
        (
            "notification-service",
            "order.created failed, retry scheduled",
            "attempt 1 by notification-service:send_confirmation: SMTPServerDisconnected; "
            "next try in 2.0 s",
        ),
        (
            "payment-service",
            "order.created delivered again",
            "to payment-service, which had handled it: acknowledged, nothing done twice",
        ),
    ]
    assert entries[0].at == NOW + timedelta(seconds=1.1)
