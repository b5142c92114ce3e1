"""Helpers for tests that run a program as a process of its own and watch what it prints:
a worker signalled mid-message, ``python -m shop.devstack up``, ``make run``'s stack.

Polling for a condition inside a test's event loop (``eventually``, ``wait_until``) is in
:mod:`shop.messaging.testing`, beside the worker it usually waits for.
"""

from __future__ import annotations

import subprocess
import time

from shop.devstack.cli import READY_LINE


def wait_for_line(process: subprocess.Popen[str], expected: str, *, within: float = 60.0) -> str:
    """Read ``process``'s output until a line that contains ``expected``; return all of the
    output read, that line last.

    Fails, showing that output, if the process closes its output first, or if lines keep
    coming for ``within`` seconds without the expected one. A read is not interrupted: a
    process that prints nothing at all is bounded by the test's own timeout.
    """
    assert process.stdout is not None, "start the process with stdout=subprocess.PIPE"
    seen: list[str] = []
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        line = process.stdout.readline()
        if line:
            seen.append(line)
        if expected in line:
            return "".join(seen)
        if not line and process.poll() is not None:
            break
    printed = "".join(seen)
    raise AssertionError(f"{process.args!r} never printed {expected!r}; it printed:\n{printed}")


def wait_for_ready(process: subprocess.Popen[str], *, within: float = 300.0) -> str:
    """Wait until ``python -m shop.devstack up`` says it is ready; return what it printed
    (the tables of where each part and process listens). Its parts and processes fail on
    their own start-up timeouts long before ``within``."""
    return wait_for_line(process, READY_LINE, within=within)
