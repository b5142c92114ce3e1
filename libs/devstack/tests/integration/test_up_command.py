"""``python -m shop.devstack up``, what ``make run`` starts: up, then down without orphans."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from shop.devstack.testing import wait_for_ready


def start_up(workdir: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "shop.devstack", "up", "--workdir", str(workdir)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "COLUMNS": "200"},
    )


def servers_of(process: subprocess.Popen[str]) -> list[psutil.Process]:
    return psutil.Process(process.pid).children(recursive=True)


def assert_all_gone(children: list[psutil.Process]) -> None:
    _, alive = psutil.wait_procs(children, timeout=20)
    assert alive == [], f"left running: {[p.cmdline()[:2] for p in alive]}"


@pytest.mark.parametrize("stop_signal", [signal.SIGTERM, signal.SIGINT])
def test_up_prints_every_part_then_stops_cleanly(tmp_path: Path, stop_signal: signal.Signals):
    process = start_up(tmp_path)
    try:
        banner = wait_for_ready(process)
        children = servers_of(process)
        for part in ("postgres", "kafka", "sqs/sns", "smtp sink"):
            assert part in banner
        assert len(children) >= 3  # postgres, tansu, moto (the SMTP sink is a thread)

        process.send_signal(stop_signal)
        output, _ = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()

    assert process.returncode == 0, output
    assert "stopped" in output
    assert_all_gone(children)


def test_servers_die_with_a_killed_up(tmp_path: Path):
    process = start_up(tmp_path)
    try:
        wait_for_ready(process)
        children = servers_of(process)
        process.kill()
        process.wait(10)
    finally:
        if process.poll() is None:
            process.kill()

    started = time.monotonic()
    assert_all_gone(children)
    assert time.monotonic() - started < 20
