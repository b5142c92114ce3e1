"""Asking payment-service's worker to reconcile while another reconciliation runs there (its
own schedule's, or another operator's): the question is asked again until it is this one's
turn, not turned into an error."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from shop.ops import reconciliation
from shop.ops.errors import OpsError
from shop.ops.settings import OpsSettings

REPORT = {"checked": 3, "findings": []}


class _Worker(BaseHTTPRequestHandler):
    busy_answers = 0
    busy_status = 409
    asked = 0

    def do_POST(self) -> None:
        type(self).asked += 1
        busy = type(self).asked <= type(self).busy_answers
        status, body = (
            (type(self).busy_status, {"detail": "busy now; ask again shortly"})
            if busy
            else (200, REPORT)
        )
        payload = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *_: object) -> None:
        pass


@pytest.fixture
def worker(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[type[_Worker], OpsSettings]]:
    """payment-service's worker, busy for its first ``busy_answers`` asks; asked again at
    once."""
    monkeypatch.setattr(reconciliation, "_BUSY_PAUSE", 0.01)
    handler = type("Worker", (_Worker,), {"busy_answers": 0, "busy_status": 409, "asked": 0})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}"
        yield handler, OpsSettings(environment="development", payment_worker_url=url)
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.parametrize(
    "status",
    [
        409,  # another reconciliation runs: this one waits its turn
        503,  # "ask again shortly": a database slow under load is no answer yet
    ],
)
def test_a_worker_that_says_ask_again_is_asked_again_until_it_answers(
    worker: tuple[type[_Worker], OpsSettings], status: int
) -> None:
    handler, settings = worker
    handler.busy_answers, handler.busy_status = 2, status

    report = asyncio.run(reconciliation._payment_service_reconciles(settings, None))

    assert report == REPORT
    assert handler.asked == 3


def test_a_worker_busy_past_the_wait_is_an_error_that_says_so(
    worker: tuple[type[_Worker], OpsSettings], monkeypatch: pytest.MonkeyPatch
) -> None:
    handler, settings = worker
    handler.busy_answers = 1_000
    monkeypatch.setattr(reconciliation, "_BUSY_WAIT", 0.1)

    with pytest.raises(OpsError, match="another reconciliation is still running"):
        asyncio.run(reconciliation._payment_service_reconciles(settings, None))


def test_a_worker_whose_database_stays_away_past_the_wait_is_an_error_that_says_so(
    worker: tuple[type[_Worker], OpsSettings], monkeypatch: pytest.MonkeyPatch
) -> None:
    handler, settings = worker
    handler.busy_answers, handler.busy_status = 1_000, 503
    monkeypatch.setattr(reconciliation, "_BUSY_WAIT", 0.1)

    with pytest.raises(OpsError, match="503"):
        asyncio.run(reconciliation._payment_service_reconciles(settings, None))
