"""Jaeger's HTTP query API as ``make run`` serves it over the span files: searched by
service, tags and time, one trace by its id, the services; refused as Jaeger refuses."""

from __future__ import annotations

import json
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import pytest

from shop.devstack.trace_query import server

pytestmark = pytest.mark.unit

NOW = datetime.now(UTC)


def line(trace: str, span: str, at: timedelta, **fields: Any) -> str:
    start = int((NOW + at).timestamp() * 1e9)
    written = {
        "trace_id": trace * 16,
        "span_id": span * 16,
        "parent_span_id": None,
        "name": f"span {span}",
        "kind": "INTERNAL",
        "service": "order-service",
        "process_kind": "api",
        "pid": 7,
        "start_unix_nano": start,
        "end_unix_nano": start + 5_000_000,
        "status": "UNSET",
        "status_message": None,
        "attributes": {},
        "events": [],
        "links": [],
    }
    return json.dumps({**written, **fields}) + "\n"


@pytest.fixture
def jaeger(tmp_path: Path) -> Iterator[str]:
    (tmp_path / "order-service.api.7.jsonl").write_text(
        line("a1", "1", timedelta(minutes=-5), kind="SERVER")
        + line(
            "a1",
            "2",
            timedelta(minutes=-5),
            parent_span_id="1" * 16,
            kind="PRODUCER",
            attributes={"shop.message.key": "order-1"},
        )
        + line("b2", "3", timedelta(minutes=-1), attributes={"shop.message.key": "order-2"})
        + line("c3", "4", timedelta(days=-3), attributes={"shop.message.key": "order-1"})
        + '{"trace_id": "half a li'
    )
    (tmp_path / "notification-service.worker.8.jsonl").write_text(
        line(
            "a1",
            "5",
            timedelta(minutes=-4),
            parent_span_id="2" * 16,
            kind="CONSUMER",
            service="notification-service",
            process_kind="worker",
            pid=8,
            status="ERROR",
            status_message="SMTPServerDisconnected",
            attributes={"shop.message.key": "order-1", "shop.message.attempt": 1},
            events=[
                {
                    "name": "retry scheduled",
                    "time_unix_nano": 1_800_000_000_000_000_000,
                    "attributes": {"shop.retry.delay_seconds": 2.0},
                }
            ],
        )
    )
    httpd = server(tmp_path)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()
    thread.join(5)


def ask(url: str, path: str, **params: str) -> tuple[int, Any]:
    query = f"?{urlencode(params)}" if params else ""
    try:
        with urllib.request.urlopen(f"{url}{path}{query}", timeout=5) as reply:
            return reply.status, json.loads(reply.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def test_a_search_answers_whole_traces_in_which_a_span_of_the_service_has_the_tags(
    jaeger: str,
) -> None:
    tags = json.dumps({"shop.message.key": "order-1"})

    status, found = ask(jaeger, "/api/traces", service="notification-service", tags=tags)

    assert status == 200
    assert found["errors"] is None
    [trace] = found["data"]  # c3 has the key too, but three days ago: out of the window
    assert trace["traceID"] == "a1" * 16
    assert sorted(span["spanID"] for span in trace["spans"]) == ["1" * 16, "2" * 16, "5" * 16]
    consumer = next(span for span in trace["spans"] if span["spanID"] == "5" * 16)
    assert consumer["references"] == [
        {"refType": "CHILD_OF", "traceID": "a1" * 16, "spanID": "2" * 16}
    ]
    assert consumer["operationName"] == "span 5"
    assert consumer["duration"] == 5_000
    assert {tag["key"]: (tag["type"], tag["value"]) for tag in consumer["tags"]} == {
        "shop.message.key": ("string", "order-1"),
        "shop.message.attempt": ("int64", 1),
        "span.kind": ("string", "consumer"),
        "otel.status_code": ("string", "ERROR"),
        "otel.status_description": ("string", "SMTPServerDisconnected"),
        "error": ("bool", True),
    }
    assert consumer["logs"] == [
        {
            "timestamp": 1_800_000_000_000_000,
            "fields": [
                {"key": "event", "type": "string", "value": "retry scheduled"},
                {"key": "shop.retry.delay_seconds", "type": "float64", "value": 2.0},
            ],
        }
    ]
    process = trace["processes"][consumer["processID"]]
    assert process == {
        "serviceName": "notification-service",
        "tags": [
            {"key": "shop.process.kind", "type": "string", "value": "worker"},
            {"key": "process.pid", "type": "int64", "value": 8},
        ],
    }


def test_the_service_the_window_the_tag_form_and_the_limit_narrow_a_search(jaeger: str) -> None:
    def traces(**params: str) -> list[str]:
        status, found = ask(jaeger, "/api/traces", **params)
        assert status == 200, found
        return [trace["traceID"] for trace in found["data"]]

    week_ago = str(int((NOW - timedelta(days=7)).timestamp() * 1e6))
    assert traces(service="order-service", tag="shop.message.key:order-1") == ["a1" * 16]
    assert traces(service="order-service", tag="shop.message.key:order-1", start=week_ago) == [
        "a1" * 16,
        "c3" * 16,
    ]
    assert traces(service="order-service") == ["b2" * 16, "a1" * 16]  # newest first
    assert traces(service="order-service", limit="1") == ["b2" * 16]
    assert traces(service="order-service", tag="span.kind:server") == ["a1" * 16]
    assert traces(service="payment-service") == []


def test_one_trace_by_its_id_and_the_services(jaeger: str) -> None:
    status, found = ask(jaeger, f"/api/traces/{'B2' * 16}")
    assert status == 200
    assert [span["spanID"] for span in found["data"][0]["spans"]] == ["3" * 16]
    assert ask(jaeger, "/api/services")[1]["data"] == ["notification-service", "order-service"]
    status, missing = ask(jaeger, f"/api/traces/{'dd' * 16}")
    assert (status, missing["errors"]) == (404, [{"code": 404, "msg": "trace not found"}])


def test_a_search_without_a_service_or_with_malformed_tags_is_refused_as_jaeger_does(
    jaeger: str,
) -> None:
    status, refused = ask(jaeger, "/api/traces", tags="{}")
    assert (status, refused["errors"]) == (
        400,
        [{"code": 400, "msg": "parameter 'service' is required"}],
    )
    assert ask(jaeger, "/api/traces", service="order-service", tags="not json")[0] == 400
    assert ask(jaeger, "/api/traces", service="order-service", tag="no-colon")[0] == 400
    assert ask(jaeger, "/api/traces", service="order-service", limit="many")[0] == 400
