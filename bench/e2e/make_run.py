"""``make run``'s command as the bench runs it: ``python -m shop.devstack up --procfile
devstack.toml`` on the bus asked for, in a folder of the bench's own, on free ports
(``--any-ports``: a developer's ``make run`` may be up). Once it is ready, every process of
the shop and of the infrastructure is found by its parent (the devstack's process) and its
command line, for its CPU time; the devstack's own process is there too: the SMTP sink runs
in it, as a thread."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import asyncpg

from shop.devstack.cli import READY_LINE
from shop.devstack.cpu import family_seconds, process_seconds

ROOT: Final = Path(__file__).resolve().parents[2]
PROCFILE: Final = ROOT / "devstack.toml"
DEVSTACK: Final = "devstack (smtp sink)"
"""The devstack's own process: it supervises the others and runs the SMTP sink."""
STOCK: Final = 1_000_000_000
"""Enough of every product that no checkout of a run is refused for stock (the development
catalogue holds a few hundred of each)."""
SPAN_FILE_EXPORTER: Final = 'TRACING__EXPORTER = "file"'
NO_EXPORTER: Final = 'TRACING__EXPORTER = "none"'
_INFRASTRUCTURE_MODULES: Final = {"shop.devstack.moto_server": "sqs/sns (moto)"}
_INFRASTRUCTURE_PROGRAMS: Final = (("postgres", "postgres"), ("tansu", "kafka (tansu)"))
"""What each server the devstack starts is called here, by the start of its program's name
(Tansu's carries its version)."""
_FAMILIES: Final = frozenset({"postgres"})
"""Processes whose CPU is theirs and their children's: PostgreSQL's backends."""


def procfile_without_span_files(procfile: Path, folder: Path) -> Path:
    """A copy of ``procfile`` in ``folder`` whose processes write no spans (tracing
    exporter ``none``: no tracer at all, as in a production process with tracing off)."""
    text = procfile.read_text()
    if SPAN_FILE_EXPORTER not in text:
        # Measuring "without span files" on a procfile that names them otherwise would
        # measure them after all: fail rather than print a false comparison.
        raise SystemExit(f"{procfile} names no {SPAN_FILE_EXPORTER!r}: update the bench")
    copy = folder / procfile.name
    copy.write_text(text.replace(SPAN_FILE_EXPORTER, NO_EXPORTER))
    return copy


async def stock_up(database_url: str) -> None:
    """Every product of order-service's catalogue in stock beyond what a run sells."""
    connection = await asyncpg.connect(database_url)
    try:
        await connection.execute("UPDATE products SET stock = $1", STOCK)
    finally:
        await connection.close()


def _procfile_modules(procfile: Path) -> dict[str, str]:
    """Module → process name, of each ``python -m MODULE`` process of the procfile."""
    document = tomllib.loads(procfile.read_text())
    modules = {}
    for name, spec in document.get("process", {}).items():
        command = spec["command"]
        if len(command) > 2 and command[1] == "-m":
            modules[command[2]] = name
    return modules


def _children(pid: int) -> list[int]:
    found = []
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            # A process that ended while we looked is no child.
            with contextlib.suppress(OSError), open(f"/proc/{entry.name}/stat") as stat:
                if int(stat.read().rpartition(")")[2].split()[1]) == pid:
                    found.append(int(entry.name))
    return found


def _command_line(pid: int) -> list[str]:
    with open(f"/proc/{pid}/cmdline", "rb") as cmdline:
        return [part.decode(errors="replace") for part in cmdline.read().split(b"\0") if part]


def _name_of(command: list[str], modules: dict[str, str]) -> str | None:
    if len(command) > 2 and command[1] == "-m":
        module = command[2]
        return modules.get(module) or _INFRASTRUCTURE_MODULES.get(module)
    program = Path(command[0]).name if command else ""
    return next(
        (name for start, name in _INFRASTRUCTURE_PROGRAMS if program.startswith(start)), None
    )


@dataclass(frozen=True)
class ShopProcess:
    name: str
    pid: int

    def cpu_seconds(self) -> float:
        if self.name in _FAMILIES:
            return family_seconds(self.pid)
        return process_seconds(self.pid)

    def environ(self) -> dict[str, str]:
        """Its environment, as it was started (the procfile's settings)."""
        with open(f"/proc/{self.pid}/environ", "rb") as environ:
            pairs = [entry.partition(b"=") for entry in environ.read().split(b"\0") if entry]
        return {name.decode(): value.decode() for name, _, value in pairs}


@dataclass
class RunningShop:
    workdir: Path
    bus: str
    shop_env: dict[str, str]
    """``shop.env``: where each part listens, as shopctl reads it."""
    processes: dict[str, ShopProcess]
    """By name: the procfile's processes, the infrastructure, and :data:`DEVSTACK`."""

    @property
    def order_api(self) -> str:
        return self.shop_env["SHOP_OPS_ORDER_API_URL"]

    @property
    def gateway(self) -> str:
        return self.shop_env["SHOP_OPS_GATEWAY_URL"]

    @property
    def mail_dir(self) -> Path:
        return Path(self.shop_env["SHOP_OPS_MAIL_DIR"])

    @property
    def order_database(self) -> str:
        return self.processes["order-api"].environ()["SHOP_ORDER_DATABASE_URL"]

    def cpu_seconds(self) -> dict[str, float]:
        """CPU seconds used so far by each process, by name."""
        return {name: process.cpu_seconds() for name, process in self.processes.items()}


def _read_env_file(path: Path) -> dict[str, str]:
    pairs = (line.partition("=") for line in path.read_text().splitlines() if line)
    return {name: value for name, _, value in pairs}


def _wait_until_ready(process: subprocess.Popen[bytes], output: Path, within: float) -> None:
    deadline = time.monotonic() + within
    while READY_LINE not in output.read_text(errors="replace"):
        if process.poll() is not None:
            raise SystemExit(
                f"make run's command exited {process.returncode} before it was ready:\n"
                + output.read_text(errors="replace")[-3000:]
            )
        if time.monotonic() > deadline:
            raise SystemExit(f"make run's command not ready within {within:.0f} s (see {output})")
        time.sleep(0.2)


def _stop(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM, as Ctrl-C: the devstack stops every process it started, then itself."""
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
    try:
        process.wait(timeout=90)
    except subprocess.TimeoutExpired:
        # Its children die with it (the devstack starts them with a parent-death signal).
        process.kill()
        process.wait(timeout=30)


@contextlib.contextmanager
def running_shop(
    workdir: Path, bus: str, procfile: Path = PROCFILE, *, within: float = 300
) -> Iterator[RunningShop]:
    """``make run`` on ``bus`` in ``workdir`` until the block ends, then stopped."""
    workdir.mkdir(parents=True, exist_ok=True)
    output = workdir / "devstack.out"
    env = {**os.environ, "SHOP_TRANSPORT": bus, "COLUMNS": "200"}
    with output.open("wb") as printed:
        process = subprocess.Popen(
            [sys.executable, "-m", "shop.devstack", "up", "--workdir", str(workdir),
             "--procfile", str(procfile), "--any-ports"],
            stdin=subprocess.DEVNULL, stdout=printed, stderr=subprocess.STDOUT, cwd=ROOT, env=env,
        )  # fmt: skip
    try:
        _wait_until_ready(process, output, within)
        modules = _procfile_modules(procfile)
        processes = {DEVSTACK: ShopProcess(DEVSTACK, process.pid)}
        for child in _children(process.pid):
            with contextlib.suppress(OSError):
                name = _name_of(_command_line(child), modules)
                if name is not None:
                    processes[name] = ShopProcess(name, child)
        missing = set(modules.values()) - processes.keys()
        if missing:
            raise SystemExit(f"make run's processes not found: {', '.join(sorted(missing))}")
        yield RunningShop(workdir, bus, _read_env_file(workdir / "shop.env"), processes)
    finally:
        _stop(process)
