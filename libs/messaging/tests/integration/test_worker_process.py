"""The worker as an orchestrator sees it: health, readiness and metrics over HTTP, and a
SIGTERM that lets the message in flight finish before the process exits 0."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

from shop.devstack.ports import free_port
from shop.devstack.testing import wait_for_line

SCRIPT = Path(__file__).with_name("worker_process.py")


def get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=2) as reply:
            return reply.status, reply.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


def test_sigterm_drains_the_message_in_flight_and_exits_zero() -> None:
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, str(SCRIPT), str(port)], stdout=subprocess.PIPE, text=True
    )
    try:
        wait_for_line(process, "started order-1")
        assert get(f"http://127.0.0.1:{port}/healthz")[0] == 200
        status, body = get(f"http://127.0.0.1:{port}/readyz")
        assert status == 200, body
        assert json.loads(body)["parts"] == {
            "consumer:notification-service": True,
            "running": True,
        }
        process.send_signal(signal.SIGTERM)
        wait_for_line(process, "handled order-1")
        assert process.wait(timeout=30) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


def test_metrics_count_what_the_worker_handled() -> None:
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, str(SCRIPT), str(port)], stdout=subprocess.PIPE, text=True
    )
    try:
        wait_for_line(process, "handled order-1")
        status, metrics = get(f"http://127.0.0.1:{port}/metrics")
        assert status == 200
        assert (
            'messaging_consumed_total{duplicate="false",group="notification-service",'
            'message_type="order.created",subscriber="send_confirmation"} 1.0'
        ) in metrics
        assert "messaging_handler_duration_seconds_bucket" in metrics
        process.send_signal(signal.SIGINT)
        assert process.wait(timeout=30) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
