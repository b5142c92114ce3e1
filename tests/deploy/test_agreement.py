"""The Dockerfile, compose and Kubernetes tell one story: one image, each process kind run
with the command its Dockerfile stage names, listening where the stage says and the
process's settings say."""

from __future__ import annotations

import copy
import re
from typing import Any

import pytest
import yaml

from .compose_model import ENV_EXAMPLE, Variant, environment, read_dotenv, variants
from .dockerfile import Dockerfile
from .entry_points import console_scripts
from .manifests import Manifest, containers, declared_ports, labels, of_kind, pod_spec, workloads
from .manifests import named as named_object
from .processes import processes
from .repository import COMPOSE_DIR, DOCKERFILE, K8S_DIR
from .settings_env import load
from .shop_k8s import main_processes, shop_containers

LOCAL_URL = re.compile(r"http://127\.0\.0\.1:(\d+)/")


def image_name(reference: str) -> str:
    """``registry/path/name:tag`` → ``registry/path/name``."""
    name, _, tag = reference.rpartition(":")
    return name if name and "/" not in tag else reference


def base_image() -> str:
    """The image name the base's workloads run, before an overlay renames it."""
    names: set[str] = {
        container["image"]
        for path in (K8S_DIR / "base").rglob("*.yaml")
        for document in yaml.safe_load_all(path.read_text())
        if document and document.get("kind") == "Deployment"
        for container in containers(document)
    }
    assert len(names) == 1, names
    return names.pop()


def compose_image() -> str:
    """The image compose runs when .env names none (its ${SHOP_IMAGE:-…} default), the one
    .env.example names too."""
    defaults: set[str] = set(
        re.findall(r"\$\{SHOP_IMAGE:-([^}]+)\}", (COMPOSE_DIR / "compose.yaml").read_text())
    )
    assert defaults == {read_dotenv(ENV_EXAMPLE)["SHOP_IMAGE"]}, defaults
    return defaults.pop()


def test_one_image_name_everywhere() -> None:
    title = re.search(r'org\.opencontainers\.image\.title="([^"]+)"', DOCKERFILE.read_text())

    assert title is not None
    assert base_image() == title[1] == image_name(compose_image())


# -- compose ----------------------------------------------------------------------------


def compose_problems(model: dict[str, Any], image: str) -> list[str]:
    kinds = processes()
    scripts = console_scripts()
    problems = []
    for name, service in model["services"].items():
        if service.get("image") != image:
            continue
        entrypoint = list(service.get("entrypoint", []))
        if entrypoint:
            if entrypoint[0] not in scripts:
                problems.append(f"{name}: runs {entrypoint}, which the image does not have")
            continue
        if name not in kinds:
            problems.append(f"{name}: is no process kind of the image")
        elif tuple(service.get("command", [])) != kinds[name].command:
            problems.append(
                f"{name}: runs {service.get('command')}, its kind {kinds[name].command}"
            )
    return problems


@pytest.mark.parametrize("variant", variants(), ids=lambda v: v.name)
def test_compose_runs_each_process_kind_with_its_command(variant: Variant) -> None:
    variables = read_dotenv(ENV_EXAMPLE)

    assert compose_problems(variant.model(variables), variables["SHOP_IMAGE"]) == []


def test_a_compose_command_that_is_not_its_kind_s_is_caught() -> None:
    variables = read_dotenv(ENV_EXAMPLE)
    model = copy.deepcopy(variants()[0].model(variables))
    model["services"]["order-worker"]["command"] = ["python", "-m", "shop.order.api"]

    assert compose_problems(model, variables["SHOP_IMAGE"]) == [
        "order-worker: runs ['python', '-m', 'shop.order.api'], its kind "
        "('python', '-m', 'shop.order.worker')"
    ]


@pytest.mark.parametrize("variant", variants(), ids=lambda v: v.name)
def test_compose_listens_where_the_image_and_the_settings_say(variant: Variant) -> None:
    dockerfile = Dockerfile.read(DOCKERFILE)
    model = variant.model(read_dotenv(ENV_EXAMPLE))
    for kind, process in processes().items():
        if process.role == "job":
            continue
        service = model["services"][kind]
        settings = load(process.settings[0], environment(service))
        port = int(getattr(settings, process.port_setting))
        checked = {int(p) for p in LOCAL_URL.findall(" ".join(service["healthcheck"]["test"]))}
        published = {int(str(p).rsplit(":", 1)[-1]) for p in service.get("ports", [])}
        assert checked == {port}, kind
        if process.role == "api":
            assert published == dockerfile.exposed(kind) == {port}, kind
        else:
            # The health port is for the stack's own network (the console, the check), not
            # the host's: never published; the Dockerfile may expose it, and nothing else.
            assert published == set(), kind
            assert dockerfile.exposed(kind) <= {port}, kind


# -- Kubernetes -------------------------------------------------------------------------


def kubernetes_problems(objects: list[Manifest]) -> list[str]:
    kinds = processes()
    shop = {r.container["image"] for r in shop_containers(objects)}
    problems = [f"the shop runs in {len(shop)} images: {sorted(shop)}"] if len(shop) != 1 else []
    for workload in workloads(objects):
        for container in containers(workload):
            name = f"{workload['metadata']['name']}/{container['name']}"
            kind = kinds.get(container["name"])
            if kind is None:
                if container["image"] in shop:
                    problems.append(f"{name}: runs the shop's image, as no process kind")
            elif tuple(container.get("command", [])) != kind.command:
                problems.append(f"{name}: runs {container.get('command')}, its kind {kind.command}")
    return problems


def test_kubernetes_runs_each_process_kind_with_its_command(objects: list[Manifest]) -> None:
    assert kubernetes_problems(objects) == []


def test_a_container_that_runs_another_kind_s_command_is_caught(objects: list[Manifest]) -> None:
    changed = copy.deepcopy(objects)
    api = pod_spec(named_object(changed, "Deployment", "payment-api"))
    api["initContainers"][0]["command"] = ["python", "-m", "shop.order", "migrate"]
    api["containers"][0]["image"] = "skincare-shop:other"

    problems = kubernetes_problems(changed)

    assert problems[0].startswith("the shop runs in 2 images")
    assert (
        "payment-api/payment-migrate: runs ['python', '-m', 'shop.order', 'migrate']"
        in (problems[1])
    )


def listening_problems(objects: list[Manifest]) -> list[str]:
    """Each long-running process declares the one port it listens on, by name (the API's
    port, the worker's health port), and the Services that select it lead to that name."""
    dockerfile = Dockerfile.read(DOCKERFILE)
    services = of_kind(objects, "Service")
    problems = []
    for running in main_processes(objects):
        declared = declared_ports(running.container)
        if set(declared.values()) != {running.port} or len(running.container["ports"]) != 1:
            problems.append(f"{running.name}: declares {declared}, listens on {running.port}")
        exposed = dockerfile.exposed(running.process.kind)
        # An API's stage exposes its port; a worker's may expose its health port or leave
        # it out (it is for the cluster: the kubelet, the console, Prometheus), no other.
        if exposed != {running.port} and (running.process.role == "api" or exposed):
            problems.append(f"{running.name}: the Dockerfile exposes {sorted(exposed)}")
        selecting = [
            s for s in services if s["spec"]["selector"].items() <= labels(running.workload).items()
        ]
        if not selecting:
            problems.append(f"{running.name}: no Service leads to it")
        for service in selecting:
            for port in service["spec"]["ports"]:
                if port.get("targetPort") not in declared:
                    problems.append(
                        f"{running.name}: Service {service['metadata']['name']} leads to "
                        f"{port.get('targetPort')}, not a port it names"
                    )
    return problems


def test_kubernetes_listens_where_the_image_and_the_settings_say(objects: list[Manifest]) -> None:
    assert listening_problems(objects) == []


def test_a_port_declared_elsewhere_than_the_process_listens_is_caught(
    objects: list[Manifest],
) -> None:
    changed = copy.deepcopy(objects)
    worker = pod_spec(named_object(changed, "Deployment", "notification-worker"))["containers"][0]
    worker["ports"][0]["containerPort"] = 9101
    service = named_object(changed, "Service", "payment-worker")
    service["spec"]["ports"][0]["targetPort"] = 9102

    assert sorted(listening_problems(changed)) == [
        "notification-worker/notification-worker: declares {'health': 9101}, listens on 9103",
        "payment-worker/payment-worker: Service payment-worker leads to 9102, not a port it names",
    ]
