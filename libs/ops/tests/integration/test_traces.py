"""An order's spans as development reads them: written to a span file by the real ``file``
exporter (shop.devstack's ``SpanFile``), served by devstack's Jaeger query server
(``shop.devstack.trace_query``) and asked of it by ops' client, as it asks production's
Jaeger."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from opentelemetry.trace import SpanKind, Status, StatusCode

from shop.devstack.trace_query import server
from shop.messaging.tracing import (
    ATTEMPT,
    MESSAGE_KEY,
    MESSAGE_TYPE,
    RETRY_DELAY,
    RETRY_SCHEDULED,
    SUBSCRIBER,
    TracingSettings,
    tracer_provider,
)
from shop.ops.settings import OpsSettings
from shop.ops.timeline import traced_tries
from shop.ops.traces import order_spans, order_traces

ORDER = uuid.uuid4()
OTHER_ORDER = uuid.uuid4()


def write_spans(folder: Path) -> None:
    """The checkout of ORDER in order-service's API, its OrderCreated failing once in
    notification-service's worker; and another order's checkout."""
    settings = TracingSettings(exporter="file", file_dir=folder)
    api = tracer_provider(settings, service_name="order-service", process_kind="api")
    worker = tracer_provider(settings, service_name="notification-service", process_kind="worker")
    with (
        api.get_tracer("tests").start_as_current_span("POST /v1/orders", kind=SpanKind.SERVER),
        worker.get_tracer("tests").start_as_current_span(
            "process order.created",
            kind=SpanKind.CONSUMER,
            attributes={
                MESSAGE_KEY: str(ORDER),
                MESSAGE_TYPE: "order.created",
                SUBSCRIBER: "notification-service:send_confirmation",
            },
        ) as delivery,
    ):
        delivery.add_event(
            RETRY_SCHEDULED,
            {ATTEMPT: 1, "exception.type": "SMTPServerDisconnected", RETRY_DELAY: 2.04},
        )
        delivery.set_status(Status(StatusCode.ERROR, "SMTPServerDisconnected"))
    with api.get_tracer("tests").start_as_current_span(
        "POST /v1/orders", kind=SpanKind.SERVER, attributes={MESSAGE_KEY: str(OTHER_ORDER)}
    ):
        pass
    api.shutdown()
    worker.shutdown()


@pytest.fixture
def tracing_url(tmp_path: Path) -> Iterator[str]:
    write_spans(tmp_path)
    httpd = server(tmp_path)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(5)


async def test_ops_reads_an_orders_traces_from_devstacks_query_server(tracing_url: str) -> None:
    settings = OpsSettings(environment="test", tracing_url=tracing_url)

    [trace] = await order_traces(settings, ORDER) or []

    steps = [(s.span.service, s.span.process_kind, s.span.kind, s.span.name) for s in trace.steps]
    assert steps == [
        ("order-service", "api", "SERVER", "POST /v1/orders"),
        ("notification-service", "worker", "CONSUMER", "process order.created"),
    ]
    assert [step.depth for step in trace.steps] == [0, 1]
    assert trace.processes == 2
    delivery = trace.steps[1].span
    assert (delivery.status, delivery.status_message) == ("ERROR", "SMTPServerDisconnected")
    assert delivery.pid == trace.steps[0].span.pid  # one test process wrote both


async def test_the_timeline_reads_a_retried_try_from_the_served_spans(tracing_url: str) -> None:
    settings = OpsSettings(environment="test", tracing_url=tracing_url)

    spans = await order_spans(settings, ORDER) or []

    assert [(e.service, e.what, e.detail) for e in traced_tries(spans)] == [
        (
            "notification-service",
            "order.created failed, retry scheduled",
            "attempt 1 by notification-service:send_confirmation: SMTPServerDisconnected; "
            "next try in 2.0 s",
        )
    ]


async def test_an_order_nothing_was_traced_for_has_no_traces(tracing_url: str) -> None:
    settings = OpsSettings(environment="test", tracing_url=tracing_url)

    assert await order_traces(settings, uuid.uuid4()) == []
