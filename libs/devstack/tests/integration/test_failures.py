"""A server that cannot start fails fast with one readable line, and leaves nothing behind."""

import socket
import sys
from pathlib import Path

import pytest

from shop.devstack import DevstackError, TansuBroker
from shop.devstack.parts import ExternalPart
from shop.devstack.ports import free_port
from shop.devstack.process import ManagedProcess


def test_a_missing_binary_is_one_clear_line(tmp_path: Path):
    broker = TansuBroker(tmp_path, binary=tmp_path / "no-such-tansu")

    with pytest.raises(DevstackError, match="executable not found") as raised:
        broker.start()

    assert "\n" not in str(raised.value)


def test_a_port_already_taken_is_reported(tmp_path: Path):
    with socket.socket() as squatter:
        squatter.bind(("127.0.0.1", 0))
        squatter.listen()
        port = squatter.getsockname()[1]

        with pytest.raises(DevstackError, match=f"port {port} is already in use"):
            TansuBroker(tmp_path, port=port).start()


def test_a_server_that_dies_while_starting_reports_its_last_words(tmp_path: Path):
    process = ManagedProcess(
        "doomed",
        [sys.executable, "-c", "print('cannot bind 127.0.0.1:1', flush=True); raise SystemExit(3)"],
        tmp_path / "doomed.log",
    )
    process.start()

    with pytest.raises(DevstackError, match=r"exited with code 3 .*cannot bind 127\.0\.0\.1:1"):
        process.wait_until(lambda: False, timeout=30, what="listening")


def test_a_server_that_never_gets_ready_is_stopped_after_the_timeout(tmp_path: Path):
    process = ManagedProcess(
        "sleepy", [sys.executable, "-c", "import time; time.sleep(60)"], tmp_path / "s.log"
    )
    process.start()

    with pytest.raises(DevstackError, match="did not happen within 1s"):
        process.wait_until(lambda: False, timeout=1, what="listening")
    assert not process.running()


def test_an_unreachable_external_server_is_reported():
    free = free_port()

    with pytest.raises(DevstackError, match=f"nothing answers at 127.0.0.1:{free}"):
        ExternalPart("postgres", "127.0.0.1", free).wait_ready()
