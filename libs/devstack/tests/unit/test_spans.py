"""The ``file`` span exporter, which a service's ``TracingSettings(exporter="file")`` finds
through this package's entry point, writes spans that ``read_spans`` gives back: all of
them, one trace's or one order's."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from opentelemetry.trace import Link, SpanContext, SpanKind

from shop.devstack.spans import read_spans
from shop.messaging.tracing import MESSAGE_KEY, TracingSettings, tracer_provider

pytestmark = pytest.mark.unit


def test_the_file_exporter_writes_spans_that_read_spans_gives_back(tmp_path: Path) -> None:
    settings = TracingSettings(exporter="file", file_dir=tmp_path)
    provider = tracer_provider(settings, service_name="order-service", process_kind="api")
    files = provider.get_tracer("tests")
    with (
        files.start_as_current_span("POST /v1/orders", kind=SpanKind.SERVER) as request,
        files.start_as_current_span("send", attributes={MESSAGE_KEY: "order-7"}),
    ):
        pass
    with files.start_as_current_span("another trace"):
        pass
    provider.force_flush()
    [path] = tmp_path.iterdir()
    with path.open("a") as file:
        file.write('{"trace_id": "half a li')  # a line being written while it is read

    spans = read_spans(tmp_path)
    assert [s.name for s in spans] == ["POST /v1/orders", "send", "another trace"]
    server, send, _ = spans
    assert server.trace_id == f"{request.get_span_context().trace_id:032x}"
    assert (server.kind, server.parent_span_id, server.service) == ("SERVER", None, "order-service")
    assert (server.process_kind, server.pid) == ("api", os.getpid())
    assert path.name == f"order-service.api.{server.pid}.jsonl"
    assert send.parent_span_id == server.span_id
    assert send.attributes == {MESSAGE_KEY: "order-7"}
    assert server.start <= send.start <= send.end <= server.end
    assert [s.name for s in read_spans(tmp_path, key="order-7")] == ["POST /v1/orders", "send"]
    assert [s.name for s in read_spans(tmp_path, trace_id=server.trace_id)] == [
        "POST /v1/orders",
        "send",
    ]
    assert read_spans(tmp_path / "nothing here") == []
    provider.shutdown()


def test_the_file_keeps_links_and_finds_keys_it_had_to_escape(tmp_path: Path) -> None:
    settings = TracingSettings(exporter="file", file_dir=tmp_path)
    provider = tracer_provider(settings, service_name="order-service", process_kind="worker")
    files = provider.get_tracer("tests")
    written_in = SpanContext(int("4b" * 16, 16), int("00f0" * 4, 16), is_remote=True)
    key = 'pesanan "é" 7'  # written escaped: \"\u00e9\"
    with files.start_as_current_span(
        "process", links=[Link(written_in)], attributes={MESSAGE_KEY: key}
    ):
        pass
    provider.force_flush()

    [span] = read_spans(tmp_path, key=key)
    assert span.links == (("4b" * 16, "00f0" * 4),)
    provider.shutdown()
