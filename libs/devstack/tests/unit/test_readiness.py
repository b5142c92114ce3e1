"""When a process of the procfile counts as ready: a worker's health port opens before it
has declared its queues, so a port that accepts is not enough where a readiness path is
named; the procfile names one for every worker and API."""

from __future__ import annotations

import threading
import tomllib
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from shop.devstack.process import ready_at

pytestmark = pytest.mark.unit

PROCFILE = Path(__file__).parents[4] / "devstack.toml"


class Readiness:
    def __init__(self) -> None:
        self.ready = False


@pytest.fixture
def health_port() -> Iterator[tuple[int, Readiness]]:
    state = Readiness()

    class Health(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200 if self.path == "/readyz" and state.ready else 503)
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Health)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1], state
    finally:
        server.shutdown()
        server.server_close()


def test_a_port_that_accepts_is_not_ready_while_its_readiness_path_says_503(
    health_port: tuple[int, Readiness],
) -> None:
    port, state = health_port
    assert ready_at(port, None), "the port accepts"
    assert not ready_at(port, "/readyz")
    state.ready = True
    assert ready_at(port, "/readyz")


def test_every_worker_and_api_of_make_run_names_its_readiness_path() -> None:
    processes = tomllib.loads(PROCFILE.read_text())["process"]
    named = {name for name, spec in processes.items() if spec.get("ready_path") == "/readyz"}
    served = {name for name in processes if name.endswith(("-worker", "-api"))}
    assert served <= named
