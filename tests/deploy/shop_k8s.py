"""The shop's processes as an overlay runs them: each container of the shop's image, the
process kind it is, and the settings it would start with."""

from __future__ import annotations

import ast
import functools
import importlib.util
from dataclasses import dataclass
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

from pydantic_settings import BaseSettings

from shop.messaging.asyncapi import ServiceBus
from shop.messaging.settings import MessagingSettings

from .manifests import Manifest, SecretKey, build, container_env, containers, workloads
from .processes import Process, processes
from .repository import OVERLAYS_DIR
from .settings_env import load, messaging_of, stand_in


@functools.cache
def _built(overlay: str) -> tuple[Manifest, ...]:
    return tuple(build(OVERLAYS_DIR / overlay))


def overlay_objects(overlay: str) -> list[Manifest]:
    """What the overlay builds (built once per session; callers must not change it)."""
    return list(_built(overlay))


@dataclass(frozen=True)
class Running:
    """One container of the shop's image in a workload."""

    workload: Manifest
    container: Manifest
    process: Process
    env: dict[str, str | SecretKey]

    @property
    def name(self) -> str:
        return f"{self.workload['metadata']['name']}/{self.container['name']}"

    @property
    def plain_env(self) -> dict[str, str]:
        """The environment, each Secret's key given a stand-in of the right shape."""
        return {
            name: stand_in(name) if isinstance(value, SecretKey) else value
            for name, value in self.env.items()
        }

    def settings(self) -> dict[type[BaseSettings], Any]:
        """Each settings class of the process, as it would start (raises as it would)."""
        env = self.plain_env
        process = self.process.named_in_settings
        return {cls: load(cls, env, process) for cls in self.process.settings}

    @property
    def listens(self) -> tuple[str, int]:
        """Where the process listens, as its settings say: the API's host and port, or the
        worker's health server's."""
        settings = self.settings()[self.process.settings[0]]
        host = str(getattr(settings, self.process.host_setting))
        return host, int(getattr(settings, self.process.port_setting))

    @property
    def port(self) -> int:
        return self.listens[1]

    @property
    def messaging(self) -> MessagingSettings:
        """The bus settings of the process (the first of its classes that has them)."""
        for instance in self.settings().values():
            if hasattr(instance, "messaging"):
                return messaging_of(instance)
        raise ValueError(f"{self.name} has no bus settings")


def shop_containers(objects: list[Manifest]) -> list[Running]:
    """Every container named after a process kind of the image (the shop's own)."""
    kinds = processes()
    found = []
    for workload in workloads(objects):
        for container in containers(workload):
            process = kinds.get(container["name"])
            if process is not None:
                found.append(
                    Running(workload, container, process, container_env(container, objects))
                )
    return found


def main_processes(objects: list[Manifest]) -> list[Running]:
    """The long-running ones (a pod's containers, not its init steps)."""
    return [
        running
        for running in shop_containers(objects)
        if running.container in running.workload["spec"]["template"]["spec"]["containers"]
    ]


def bus_of(process: Process) -> ServiceBus:
    """The service's own description of its bus (its ``shop.asyncapi`` entry point)."""
    for entry_point in entry_points(group="shop.asyncapi"):
        if entry_point.value.startswith(f"{process.package}."):
            service: ServiceBus = entry_point.load()()
            return service
    raise LookupError(f"{process.package} declares no bus")


def keyword_constant(module: str, keyword: str) -> float:
    """A number passed as ``keyword=`` in a module's source (uvicorn.run's
    timeout_graceful_shutdown in an API's __main__), read without running it."""
    spec = importlib.util.find_spec(f"{module}.__main__") or importlib.util.find_spec(module)
    if spec is None or spec.origin is None:
        raise LookupError(module)
    tree = ast.parse(Path(spec.origin).read_text())
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.keyword)
            and node.arg == keyword
            and isinstance(node.value, ast.Constant)
            and isinstance(node.value.value, int | float)
        ):
            return float(node.value.value)
    raise LookupError(f"{module} passes no {keyword}=")
