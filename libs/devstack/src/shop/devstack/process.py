"""A child process that dies with us: started, waited for, stopped, never orphaned."""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import os
import signal
import socket
import subprocess
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Sequence
from pathlib import Path

from shop.devstack.errors import DevstackError

_PR_SET_PDEATHSIG = 1
_libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)


def _die_with_parent() -> None:
    # Runs in the child between fork and exec: if the test run or `make run` is killed
    # with SIGKILL, the kernel kills this server too instead of leaving an orphan.
    _libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


def port_accepts(host: str, port: int, timeout: float = 0.2) -> bool:
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def answers_ok(url: str, timeout: float = 1.0) -> bool:
    """Whether a GET of ``url`` answers 200 (a readiness endpoint saying ready)."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as reply:
            return bool(reply.status == 200)
    except (urllib.error.URLError, OSError):  # HTTPError (a 503) is a URLError too
        return False


def ready_at(port: int, path: str | None) -> bool:
    """Whether the process behind ``port`` is ready: ``path`` answers 200 there, or, with
    no path, the port accepts connections."""
    if path is None:
        return port_accepts("127.0.0.1", port)
    return answers_ok(f"http://127.0.0.1:{port}{path}")


class ManagedProcess:
    """One server process with its output in a log file.

    The kernel's parent-death signal is tied to the thread that forks, so start servers
    from a thread that lives as long as they should (the main thread, in practice).
    """

    def __init__(
        self,
        name: str,
        argv: Sequence[str],
        log_path: Path,
        *,
        env: dict[str, str] | None = None,
        user: str | None = None,
        stop_signal: signal.Signals = signal.SIGTERM,
    ) -> None:
        self.name = name
        self.argv = list(argv)
        self.log_path = log_path
        self.env = env
        self.user = user
        self.stop_signal = stop_signal
        self._popen: subprocess.Popen[bytes] | None = None

    @property
    def pid(self) -> int | None:
        return self._popen.pid if self._popen else None

    def start(self) -> None:
        if threading.current_thread() is not threading.main_thread():
            raise DevstackError(f"{self.name}: start servers from the main thread")
        if self.running():
            # A second process would lose the first: never stopped, never reaped.
            raise DevstackError(f"{self.name}: already running (pid {self.pid})")
        executable = Path(self.argv[0])
        if executable.is_absolute() and not os.access(executable, os.X_OK):
            raise DevstackError(f"{self.name}: executable not found: {executable}")
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with self.log_path.open("ab") as log:
            try:
                self._popen = subprocess.Popen(
                    self.argv,
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    env=self.env,
                    user=self.user,
                    preexec_fn=_die_with_parent,  # noqa: PLW1509 - only calls prctl
                )
            except OSError as error:
                raise DevstackError(f"{self.name}: cannot run {self.argv[0]}: {error}") from error

    def running(self) -> bool:
        return self._popen is not None and self._popen.poll() is None

    def wait_until(self, ready: Callable[[], bool], timeout: float, what: str) -> None:
        """Poll ``ready`` until it holds; fail at once if the process exits meanwhile."""
        deadline = time.monotonic() + timeout
        while True:
            if not self.running():
                code = self._popen.returncode if self._popen else None
                raise DevstackError(
                    f"{self.name} exited with code {code} before {what}: "
                    f"{self.last_log_line()} (log: {self.log_path})"
                )
            if ready():
                return
            if time.monotonic() > deadline:
                self.stop()
                raise DevstackError(
                    f"{self.name}: {what} did not happen within {timeout:.0f}s: "
                    f"{self.last_log_line()} (log: {self.log_path})"
                )
            time.sleep(0.05)

    def last_log_line(self) -> str:
        with contextlib.suppress(OSError):
            lines = [ln for ln in self.log_path.read_text(errors="replace").splitlines() if ln]
            if lines:
                return lines[-1].strip()
        return "no output"

    def send_signal(self, signum: signal.Signals) -> None:
        """Signal the process as it runs (a chaos test's SIGKILL, SIGSTOP or SIGCONT);
        nothing when it has exited."""
        if self._popen is not None and self._popen.poll() is None:
            self._popen.send_signal(signum)

    def wait(self, timeout: float) -> int | None:
        """Wait up to ``timeout`` seconds for the process to exit: its exit code (negative:
        the signal that ended it), or None while it still runs."""
        if self._popen is None:
            return None
        try:
            return self._popen.wait(timeout)
        except subprocess.TimeoutExpired:
            return None

    def stop(self, timeout: float = 15.0) -> None:
        """Ask the process to stop, then kill it if it has not within ``timeout``."""
        popen = self._popen
        if popen is None or popen.poll() is not None:
            return
        popen.send_signal(self.stop_signal)
        try:
            popen.wait(timeout)
        except subprocess.TimeoutExpired:
            popen.kill()
            popen.wait(5)
