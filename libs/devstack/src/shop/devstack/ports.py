"""Ports for the servers the devstack starts, handed out so that no one else takes them
between the pick and the server's bind.

A server learns its port before it binds it: its clients are given the address first. A
port picked by binding port 0 comes from the kernel's ephemeral range, the range it also
draws every outgoing connection's local port from, so in that gap any client on the machine
(another test's database connection) can take it and the server fails with "address already
in use". Ports are therefore picked below that range, where only explicit binds go, and
recorded in a registry shared by every process on the machine that picks here (parallel
test workers, `make run`): a port stays reserved for as long as the process that asked for
it lives, so a server restarted on its own port (the chaos suite restarts Postgres) finds
it still free.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import random
import socket
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path

from shop.devstack.errors import DevstackError

LOWEST_PORT = 10000
"""Below it lie the ports of well-known servers (Postgres, Redis, most of `make run`'s)."""
FEWEST_CANDIDATES = 1000
"""Fewer candidates than this outside the ephemeral range (a machine whose range spans
nearly every port): the kernel picks instead, as for port 0, recorded all the same."""

REGISTRY = Path(tempfile.gettempdir()) / f"shop-devstack-ports-{os.getuid()}.json"

_TRIES = 200
_DEFAULT_EPHEMERAL = (32768, 60999)


def ephemeral_range() -> tuple[int, int]:
    """The kernel's range for outgoing connections' local ports, both ends included."""
    try:
        low, high = Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()
        return int(low), int(high)
    except (OSError, ValueError):
        return _DEFAULT_EPHEMERAL


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port nobody listens on, outside the ephemeral range, and handed to no other
    caller while this process lives (the caller binds it soon after)."""
    low, high = ephemeral_range()
    candidates = [*range(LOWEST_PORT, low), *range(high + 1, 65536)]
    return pick_port(candidates if len(candidates) >= FEWEST_CANDIDATES else None, REGISTRY, host)


def pick_port(candidates: Sequence[int] | None, registry: Path, host: str = "127.0.0.1") -> int:
    """One of ``candidates`` (None: of the kernel's picks) that ``host`` can bind and that
    ``registry`` holds for no living process; recorded there for this one."""
    with _locked(registry) as handed_out:
        gone = {pid for pid in set(handed_out.values()) if not _alive(pid)}
        for port in [port for port, owner in handed_out.items() if owner in gone]:
            del handed_out[port]
        if candidates is None:
            candidates = [_kernels_pick(host) for _ in range(_TRIES)]
        left = [port for port in candidates if port not in handed_out]
        # At random: two processes picking at once rarely try the same ports first.
        for port in random.sample(left, min(_TRIES, len(left))):
            if _bindable(host, port):
                handed_out[port] = os.getpid()
                return port
    raise DevstackError(
        f"no free port on {host} among {len(candidates)} candidates "
        f"({min(candidates, default=0)}-{max(candidates, default=0)}), {_TRIES} tried"
    )


@contextlib.contextmanager
def _locked(registry: Path) -> Iterator[dict[int, int]]:
    """The registry's ports and their pickers' pids, read under a lock and written back
    whole (a new file put in its place: a process killed meanwhile leaves the old one)."""
    with open(registry.with_name(registry.name + ".lock"), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        try:
            ports = json.loads(registry.read_text(encoding="utf-8"))
            handed_out = {int(port): int(pid) for port, pid in ports.items()}
        except (OSError, ValueError, TypeError, AttributeError):  # none yet, or unreadable
            handed_out = {}
        yield handed_out
        written = registry.with_name(f"{registry.name}.{os.getpid()}")
        written.write_text(json.dumps({str(port): pid for port, pid in handed_out.items()}))
        os.replace(written, registry)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # alive, another user's
        return True
    return True


def _kernels_pick(host: str) -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((host, 0))
        return int(probe.getsockname()[1])


def _bindable(host: str, port: int) -> bool:
    # Without SO_REUSEADDR, stricter than any server: a port still in TIME_WAIT is passed
    # over too, whichever way its next server binds.
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        try:
            probe.bind((host, port))
        except OSError:
            return False
        return True
