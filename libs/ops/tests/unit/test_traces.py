"""One order's spans, asked of the tracing backend (Jaeger's query API, faked with an httpx
MockTransport), made into traces in call order, and the failed tries the timeline reads
from them."""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest

from shop.ops.errors import OpsError, Unreachable
from shop.ops.settings import OpsSettings
from shop.ops.timeline import traced_tries
from shop.ops.traces import Span, SpanEvent, TracingBackend, as_traces, order_traces

pytestmark = pytest.mark.unit

NOW = datetime(2026, 3, 14, 9, 30, tzinfo=UTC)


def span(span_id: str, parent: str | None, at: float, **fields: Any) -> Span:
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
    return Span(**{**defaults, **fields})


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
            SpanEvent(
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


ORDER = uuid.UUID("5f0c5d1e-7b6a-4c1e-9d3b-2a4f6e8c0b1d")
TRACE = "ab" * 16
URL = "http://jaeger.test:16686"


def micros(at: datetime) -> int:
    return int(at.timestamp() * 1_000_000)


def jaeger_trace() -> dict[str, Any]:
    """The checkout's trace as Jaeger's query API answers it: a request in order-service's
    API, and the delivery of its OrderCreated to notification-service, tried twice."""
    return {
        "traceID": TRACE,
        "spans": [
            {
                "traceID": TRACE,
                "spanID": "1" * 16,
                "operationName": "POST /v1/orders",
                "references": [],
                "startTime": micros(NOW),
                "duration": 12_000,
                "tags": [{"key": "span.kind", "type": "string", "value": "server"}],
                "logs": [],
                "processID": "p1",
            },
            {
                "traceID": TRACE,
                "spanID": "2" * 16,
                "operationName": "process order.created",
                "references": [{"refType": "CHILD_OF", "traceID": TRACE, "spanID": "1" * 16}],
                "startTime": micros(NOW + timedelta(seconds=1)),
                "duration": 250_000,
                "tags": [
                    {"key": "span.kind", "type": "string", "value": "consumer"},
                    {"key": "shop.message.key", "type": "string", "value": str(ORDER)},
                    {"key": "shop.message.type", "type": "string", "value": "order.created"},
                    {"key": "shop.message.attempt", "type": "int64", "value": 1},
                    {"key": "otel.status_code", "type": "string", "value": "ERROR"},
                    {"key": "otel.status_description", "type": "string", "value": "retry"},
                    {"key": "error", "type": "bool", "value": True},
                ],
                "logs": [
                    {
                        "timestamp": micros(NOW + timedelta(seconds=1.2)),
                        "fields": [
                            {"key": "event", "type": "string", "value": "retry scheduled"},
                            {"key": "shop.retry.delay_seconds", "type": "float64", "value": 2.0},
                        ],
                    }
                ],
                "processID": "p2",
            },
        ],
        "processes": {
            "p1": {
                "serviceName": "order-service",
                "tags": [
                    {"key": "shop.process.kind", "type": "string", "value": "api"},
                    {"key": "process.pid", "type": "int64", "value": 41},
                ],
            },
            "p2": {
                "serviceName": "notification-service",
                "tags": [
                    {"key": "shop.process.kind", "type": "string", "value": "worker"},
                    {"key": "process.pid", "type": "int64", "value": 42},
                ],
            },
        },
        "warnings": None,
    }


class FakeJaeger:
    """Jaeger's query API: the checkout's trace to a search of either of its services."""

    def __init__(self) -> None:
        self.asked: list[httpx.QueryParams] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        assert request.url.path == "/api/traces"
        self.asked.append(request.url.params)
        service = request.url.params["service"]
        found = [jaeger_trace()] if service in {"order-service", "notification-service"} else []
        return httpx.Response(200, json={"data": found, "total": len(found), "errors": None})


async def test_the_backend_is_searched_in_every_service_for_spans_keyed_by_the_order() -> None:
    jaeger = FakeJaeger()
    async with httpx.AsyncClient(base_url=URL, transport=httpx.MockTransport(jaeger)) as client:
        spans = await TracingBackend(client, URL).spans_with_key(str(ORDER), now=NOW)

    assert sorted(params["service"] for params in jaeger.asked) == [
        "notification-service",
        "order-service",
        "payment-service",
    ]
    for params in jaeger.asked:
        assert json.loads(params["tags"]) == {"shop.message.key": str(ORDER)}
        assert int(params["end"]) == micros(NOW)
        assert int(params["start"]) == micros(NOW - timedelta(days=7))
    # Found through two services, the trace's spans are there once each.
    assert [s.span_id for s in spans] == ["1" * 16, "2" * 16]


async def test_a_span_of_jaegers_json_reads_as_the_shop_wrote_it() -> None:
    jaeger = FakeJaeger()
    async with httpx.AsyncClient(base_url=URL, transport=httpx.MockTransport(jaeger)) as client:
        request, delivery = await TracingBackend(client, URL).spans_with_key(str(ORDER))

    assert (request.kind, request.service, request.process_kind, request.pid) == (
        "SERVER",
        "order-service",
        "api",
        41,
    )
    assert (request.parent_span_id, request.status, request.seconds) == (None, "UNSET", 0.012)
    assert delivery == Span(
        trace_id=TRACE,
        span_id="2" * 16,
        parent_span_id="1" * 16,
        name="process order.created",
        kind="CONSUMER",
        service="notification-service",
        process_kind="worker",
        pid=42,
        start=NOW + timedelta(seconds=1),
        end=NOW + timedelta(seconds=1.25),
        status="ERROR",
        status_message="retry",
        attributes={
            "shop.message.key": str(ORDER),
            "shop.message.type": "order.created",
            "shop.message.attempt": 1,
        },
        events=(
            SpanEvent(
                "retry scheduled",
                NOW + timedelta(seconds=1.2),
                {"shop.retry.delay_seconds": 2.0},
            ),
        ),
    )


async def test_without_a_tracing_backend_an_order_has_no_traces_and_nothing_is_asked() -> None:
    assert await order_traces(OpsSettings(environment="test"), ORDER) is None


async def test_a_backend_that_refuses_is_said_in_one_line_with_its_errors() -> None:
    def refusing(request: httpx.Request) -> httpx.Response:
        errors = [{"code": 400, "msg": "parameter 'service' is required"}]
        return httpx.Response(400, json={"data": None, "errors": errors})

    transport = httpx.MockTransport(refusing)
    async with httpx.AsyncClient(base_url=URL, transport=transport) as client:
        with pytest.raises(OpsError) as refused:
            await TracingBackend(client, URL).spans_with_key(str(ORDER))

    assert str(refused.value) == (
        f"the tracing backend at {URL} answered 400: parameter 'service' is required"
    )


async def test_a_backend_that_is_away_is_unreachable() -> None:
    def away(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("connection refused", request=request)

    async with httpx.AsyncClient(base_url=URL, transport=httpx.MockTransport(away)) as client:
        with pytest.raises(Unreachable) as away_error:
            await TracingBackend(client, URL).spans_with_key(str(ORDER))

    assert away_error.value.what == "the tracing backend"
