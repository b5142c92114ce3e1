"""The shop's process kinds, as the Dockerfile names them, and what the code says of each:
which settings classes it reads, and whether it serves HTTP, works off the bus, or runs
once."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final, Literal

from pydantic_settings import BaseSettings

from shop.console.settings import ConsoleSettings
from shop.notification.settings import NotificationSettings
from shop.ops.settings import OpsSettings
from shop.order.settings import OrderSettings
from shop.payment.settings import PaymentSettings

from .dockerfile import Dockerfile
from .repository import DOCKERFILE

SETTINGS_OF: Final[dict[str, tuple[type[BaseSettings], ...]]] = {
    "shop.order": (OrderSettings,),
    "shop.payment": (PaymentSettings,),
    "shop.notification": (NotificationSettings,),
    # The console's own settings, and where the running shop is (shop.console.bootstrap
    # builds both).
    "shop.console": (ConsoleSettings, OpsSettings),
}
"""Each service package's settings: every process of the package reads these."""

SHOPCTL_SETTINGS: Final[tuple[type[BaseSettings], ...]] = (OpsSettings,)

Role = Literal["api", "worker", "job"]


@dataclass(frozen=True)
class Process:
    kind: str
    """The Dockerfile stage of the same name: ``order-api``…"""
    command: tuple[str, ...]

    @property
    def module(self) -> str:
        """What ``python -m`` runs: ``shop.order.api`` (or ``shop.order`` for a CLI)."""
        if self.command[:2] != ("python", "-m"):
            raise ValueError(f"{self.kind}: {self.command} is not `python -m …`")
        return self.command[2]

    @property
    def package(self) -> str:
        """The service package: ``shop.order``."""
        return ".".join(self.module.split(".")[:2])

    @property
    def role(self) -> Role:
        if self.module.endswith(".api"):
            return "api"
        if self.module.endswith(".worker"):
            return "worker"
        return "job"

    @property
    def settings(self) -> tuple[type[BaseSettings], ...]:
        return SETTINGS_OF[self.package]

    @property
    def named_in_settings(self) -> str:
        """What the entry point names its process to the service's settings, whose
        production checks judge what that process uses: ``api``, ``worker``, or the
        command-line app's command (``migrate``, ``seed``)."""
        if self.role != "job":
            return self.role
        return self.command[3]

    @property
    def port_setting(self) -> str:
        """The settings field of the port the process listens on: the API's, or the
        worker's health port."""
        if self.role == "job":
            raise ValueError(f"{self.kind} listens on nothing")
        return "port" if self.role == "api" else "worker_health_port"

    @property
    def host_setting(self) -> str:
        """The settings field of the address that port listens on."""
        return self.port_setting.removesuffix("port") + "host"


def processes(dockerfile: Dockerfile | None = None) -> dict[str, Process]:
    """Every process kind the image has, by its name."""
    dockerfile = dockerfile or Dockerfile.read(DOCKERFILE)
    return {
        kind: Process(kind, tuple(command)) for kind, command in dockerfile.process_kinds().items()
    }


def process_of(command: Sequence[str]) -> Process | None:
    """The process kind whose command this is, if any."""
    for process in processes().values():
        if tuple(command) == process.command:
            return process
    return None
