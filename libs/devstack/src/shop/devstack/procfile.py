"""The shop's own processes, run beside the infrastructure by ``up --procfile``.

A procfile (TOML) names each process, its command, its environment and the commands that
prepare it (migrations, seed data). Values may name what the devstack started:

``{python}``, ``{workdir}``, ``{postgres_url}``, ``{database_url:NAME}`` (the database NAME,
created if missing), ``{kafka_bootstrap}``, ``{aws_url}``, ``{aws_region}``,
``{aws_access_key_id}``, ``{aws_secret_access_key}``, ``{smtp_host}``, ``{smtp_port}``,
``{mail_dir}``, ``{port:NAME}`` (a free port, the same for every use of NAME in one run),
``{port:NAME=8001}`` (8001 when it is free, else any free port).

The bus is chosen per run: ``[messaging.kafka]`` and ``[messaging.sqs]`` hold the settings
of each transport, and a process with ``messaging_prefix = "SHOP_ORDER_MESSAGING__"`` gets
those of the chosen one under its prefix. ``[shop_env]`` (with a ``messaging_prefix`` too)
is written to ``shop.env`` in the workdir, for the tools that reach the running shop from
outside (``shopctl``, the console). ``try`` lists commands printed once all is ready.

The devstack knows nothing of the services: it only runs what the file says.
"""

from __future__ import annotations

import asyncio
import functools
import re
import subprocess
import sys
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from shop.devstack.errors import DevstackError
from shop.devstack.ports import free_port
from shop.devstack.process import ManagedProcess, port_accepts, ready_at
from shop.devstack.stack import Endpoints

_PLACEHOLDER = re.compile(r"\{([a-z_]+)(?::([a-z0-9_]+(?:=[0-9]+)?))?\}")


@dataclass
class ShopProcess:
    name: str
    argv: list[str]
    env: dict[str, str]
    setup: list[list[str]] = field(default_factory=list)
    ready_port: int | None = None
    """The process is ready once this port accepts connections…"""
    ready_path: str | None = None
    """…or, when set, once a GET of this path on it answers 200: a worker's health port
    opens before it has declared its queues, and an event published meanwhile on SNS
    reaches no queue of it."""
    url: str | None = None
    """Where a person reaches it (printed)."""


class Placeholders:
    """Values for ``{…}`` in a procfile, from the running devstack."""

    def __init__(
        self, endpoints: Endpoints, workdir: Path, *, preferred_ports: bool = True
    ) -> None:
        self.endpoints = endpoints
        self.workdir = workdir
        # False: any free port, never the preferred one (``=8001``), for a stack that runs
        # beside a developer's ``make run``.
        self.preferred_ports = preferred_ports
        self.ports: dict[str, int] = {}
        self.databases: set[str] = set()

    def resolve(self, text: str) -> str:
        return _PLACEHOLDER.sub(lambda m: self._value(m.group(1), m.group(2)), text)

    def _value(self, name: str, argument: str | None) -> str:
        endpoints = self.endpoints
        simple = {
            "python": sys.executable,
            "workdir": str(self.workdir),
            "postgres_url": endpoints.postgres.url(),
            "kafka_bootstrap": endpoints.kafka.bootstrap_servers,
            "aws_url": endpoints.aws.url or "",
            "aws_region": endpoints.aws.region,
            "aws_access_key_id": endpoints.aws.access_key_id,
            "aws_secret_access_key": endpoints.aws.secret_access_key,
            "smtp_host": endpoints.smtp.host,
            "smtp_port": str(endpoints.smtp.port),
            "mail_dir": str(endpoints.mail_dir),
        }
        if name in simple and argument is None:
            return simple[name]
        if name == "port" and argument:
            port_name, _, preferred = argument.partition("=")
            if port_name not in self.ports:
                wanted = int(preferred) if preferred and self.preferred_ports else None
                free = wanted is not None and not port_accepts("127.0.0.1", wanted)
                self.ports[port_name] = wanted if free and wanted else free_port()
            return str(self.ports[port_name])
        if name == "database_url" and argument:
            self._ensure_database(argument)
            return endpoints.postgres.url(argument)
        raise DevstackError(
            f"procfile: unknown placeholder {{{name}{':' + argument if argument else ''}}}"
        )

    def _ensure_database(self, name: str) -> None:
        if name not in self.databases:
            asyncio.run(self.endpoints.postgres.ensure_database(name))
            self.databases.add(name)


TRANSPORTS = ("kafka", "sqs")
SHOP_ENV_FILE = "shop.env"


@dataclass(frozen=True)
class Procfile:
    """A procfile read for one run: its processes, the environment of the tools that reach
    the shop from outside, and the commands to try."""

    processes: list[ShopProcess]
    shop_env: dict[str, str]
    try_commands: list[str]

    def write_shop_env(self, workdir: Path) -> Path:
        """``shop.env`` in ``workdir``: one ``NAME=value`` a line."""
        path = workdir / SHOP_ENV_FILE
        path.write_text("".join(f"{name}={value}\n" for name, value in self.shop_env.items()))
        return path


def load(path: Path, placeholders: Placeholders, *, transport: str = "kafka") -> Procfile:
    try:
        document = tomllib.loads(path.read_text())
    except (OSError, tomllib.TOMLDecodeError) as error:
        raise DevstackError(f"procfile {path}: {error}") from error
    messaging = document.get("messaging", {})
    if messaging and transport not in messaging:
        raise DevstackError(
            f"procfile {path}: no [messaging.{transport}] (it has {', '.join(messaging)})"
        )
    bus = {key: str(value) for key, value in messaging.get(transport, {}).items()}

    def environment(spec: dict[str, object]) -> dict[str, str]:
        env = dict(spec.get("env", {}))  # type: ignore[call-overload]
        prefix = spec.get("messaging_prefix")
        if prefix:
            env.update({f"{prefix}{key}": value for key, value in bus.items()})
        return {key: placeholders.resolve(str(value)) for key, value in env.items()}

    processes = []
    for name, spec in document.get("process", {}).items():
        ready_port = spec.get("ready_port")
        processes.append(
            ShopProcess(
                name=name,
                argv=[placeholders.resolve(part) for part in spec["command"]],
                env=environment(spec),
                setup=[[placeholders.resolve(p) for p in step] for step in spec.get("setup", [])],
                ready_port=int(placeholders.resolve(str(ready_port))) if ready_port else None,
                ready_path=spec.get("ready_path"),
                url=placeholders.resolve(spec["url"]) if "url" in spec else None,
            )
        )
    return Procfile(
        processes=processes,
        shop_env=environment(document.get("shop_env", {})),
        try_commands=[placeholders.resolve(str(c)) for c in document.get("try", [])],
    )


class ShopProcesses:
    """Prepare, start, await and stop the procfile's processes, in file order."""

    def __init__(
        self, processes: list[ShopProcess], workdir: Path, base_env: dict[str, str]
    ) -> None:
        self.processes = processes
        self.workdir = workdir
        self.base_env = base_env
        self._running: list[ManagedProcess] = []

    def start(self, timeout: float = 60) -> None:
        for process in self.processes:
            env = {**self.base_env, **process.env}
            for step in process.setup:
                done = subprocess.run(step, env=env, capture_output=True, text=True, check=False)
                if done.returncode != 0:
                    raise DevstackError(
                        f"{process.name}: {' '.join(step[1:])} failed: "
                        f"{(done.stderr or done.stdout).strip()[-500:]}"
                    )
            managed = ManagedProcess(
                process.name, process.argv, self.workdir / "logs" / f"{process.name}.log", env=env
            )
            managed.start()
            self._running.append(managed)
        for process, managed in zip(self.processes, self._running, strict=True):
            if process.ready_port is not None:
                managed.wait_until(
                    functools.partial(ready_at, process.ready_port, process.ready_path),
                    timeout,
                    f"ready on {process.ready_port}{process.ready_path or ''}",
                )

    def stop(self) -> None:
        while self._running:
            self._running.pop().stop()
