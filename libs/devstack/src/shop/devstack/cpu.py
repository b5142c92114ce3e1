"""CPU time from /proc, for benchmarks that print how the machine's cores were shared
between client, server and the infrastructure (Linux only)."""

from __future__ import annotations

import contextlib
import os
import resource

TICKS = os.sysconf("SC_CLK_TCK")
CORES = os.cpu_count() or 1


def machine_ticks() -> tuple[int, int]:
    """(busy, total) clock ticks of all cores since boot."""
    with open("/proc/stat") as stat:
        values = [int(v) for v in stat.readline().split()[1:9]]
    return sum(values) - values[3] - values[4], sum(values)


def _stat(pid: int | str) -> list[str]:
    with open(f"/proc/{pid}/stat") as stat:
        return stat.read().rpartition(")")[2].split()


def _seconds(fields: list[str]) -> float:
    return (int(fields[11]) + int(fields[12])) / TICKS


def process_seconds(pid: int | None) -> float:
    """CPU seconds of ``pid`` (0 for None: a server that is not ours)."""
    return 0.0 if pid is None else _seconds(_stat(pid))


def tree_seconds(pid: int | None) -> float:
    """CPU seconds of ``pid`` and its children (PostgreSQL: the postmaster, its backends)."""
    if pid is None:
        return 0.0
    total = 0.0
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            with contextlib.suppress(OSError):  # a process that ended while we looked
                fields = _stat(entry.name)
                if int(entry.name) == pid or int(fields[1]) == pid:
                    total += _seconds(fields)
    return total


def family_seconds(pid: int) -> float:
    """CPU seconds of ``pid``, its children, and those of its children that have ended
    (PostgreSQL: the postmaster, its backends, and the backends of connections closed
    since, which a pool renews): a figure that never goes back while ``pid`` runs."""
    fields = _stat(pid)
    reaped = (int(fields[13]) + int(fields[14])) / TICKS
    return tree_seconds(pid) + reaped


def own_seconds() -> float:
    """CPU seconds of this process."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime
