"""The ports the devstack hands to the servers it starts.

A server is given its port before it binds it (its clients need the address first). In the
gap, a port from the kernel's ephemeral range can be taken by any outgoing connection on
the machine (another test's database client), and the server then fails with "address
already in use"; so can a port another test worker picked the same moment."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from shop.devstack.errors import DevstackError
from shop.devstack.ports import ephemeral_range, free_port, pick_port

pytestmark = pytest.mark.unit


def test_an_outgoing_connection_holds_its_local_port_against_a_server() -> None:
    # Why the ephemeral range is no place for a server's port: the kernel draws every
    # outgoing connection's local port from it, and a server can no longer bind that port.
    with (
        socket.create_server(("127.0.0.1", 0)) as listener,
        socket.create_connection(listener.getsockname()) as client,
        socket.socket() as server,
    ):
        taken = client.getsockname()[1]
        low, high = ephemeral_range()
        assert low <= taken <= high
        server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        with pytest.raises(OSError, match="in use"):
            server.bind(("127.0.0.1", taken))


def test_a_port_is_never_one_the_kernel_may_give_an_outgoing_connection() -> None:
    low, high = ephemeral_range()
    ports = [free_port() for _ in range(200)]
    assert [port for port in ports if low <= port <= high] == []
    assert all(1024 < port < 65536 for port in ports)


def test_a_port_handed_out_is_not_handed_out_again_while_its_picker_lives(
    tmp_path: Path,
) -> None:
    registry = tmp_path / "ports.json"
    # Candidates no one else on the machine is handed meanwhile: held for this process in
    # the machine's own registry.
    candidates = sorted(free_port() for _ in range(10))
    # Another process (a second test worker) takes half of them and lives on.
    other = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys; from pathlib import Path; from shop.devstack.ports import pick_port;"
            f"print(*[pick_port({candidates!r}, Path({str(registry)!r})) for _ in range(5)]);"
            "sys.stdout.flush(); sys.stdin.read()",
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert other.stdout is not None
        theirs = {int(port) for port in other.stdout.readline().split()}
        ours = {pick_port(candidates, registry) for _ in range(5)}
        assert len(theirs) == len(ours) == 5
        assert theirs.isdisjoint(ours)
        with pytest.raises(DevstackError, match="no free port"):
            pick_port(candidates, registry)
    finally:
        assert other.stdin is not None
        other.stdin.close()
        other.wait(timeout=10)
    # Its picker gone, a port is free to be handed out again.
    assert pick_port(candidates, registry) in theirs


def test_a_port_a_server_already_listens_on_is_skipped(tmp_path: Path) -> None:
    with socket.create_server(("127.0.0.1", 0)) as listener:
        busy = listener.getsockname()[1]
        registry = tmp_path / "ports.json"
        with pytest.raises(DevstackError, match="no free port"):
            pick_port(range(busy, busy + 1), registry)


def test_an_unreadable_registry_is_started_afresh(tmp_path: Path) -> None:
    registry = tmp_path / "ports.json"
    registry.write_text("{not json")
    port = free_port()
    assert pick_port([port], registry) == port


def test_with_no_candidates_the_kernel_picks_and_the_pick_is_recorded(tmp_path: Path) -> None:
    # As on a machine whose ephemeral range spans nearly every port.
    registry = tmp_path / "ports.json"
    port = pick_port(None, registry)
    assert 1024 < port < 65536
    assert json.loads(registry.read_text()) == {str(port): os.getpid()}
