"""Each container of the shop's image gets variables its settings classes read, and all
that production needs: it would start (the production checks pass with the Secrets'
keys filled in), and nothing it uses is left pointing at the container itself."""

from __future__ import annotations

import copy

import pytest
from pydantic import ValidationError

from .manifests import Manifest, container_env, containers, pod_spec, workloads
from .manifests import named as named_object
from .settings_env import loopback_defaults, unknown_variables, unnamed_environments
from .shop_k8s import Running, shop_containers


def unknown(objects: list[Manifest]) -> dict[str, list[str]]:
    found = {r.name: unknown_variables(r.env, r.process.settings) for r in shop_containers(objects)}
    return {name: variables for name, variables in found.items() if variables}


def start_problems(running: Running) -> list[str]:
    try:
        started = running.settings()
    except ValidationError as error:
        return [f"{running.name}: {e['msg']}" for e in error.errors()]
    problems = []
    for cls, instance in started.items():
        if getattr(instance, "environment", "production") != "production":
            problems.append(f"{running.name}: runs as {instance.environment}")
        prefix = str(cls.model_config.get("env_prefix", ""))
        for variable in loopback_defaults(instance, running.plain_env, prefix):
            problems.append(f"{running.name}: {variable} is left at the container itself")
    return problems


def test_every_variable_is_one_the_settings_read(objects: list[Manifest]) -> None:
    assert unknown(objects) == {}


def test_a_variable_no_settings_read_is_caught(objects: list[Manifest]) -> None:
    changed = copy.deepcopy(objects)
    worker = pod_spec(named_object(changed, "Deployment", "notification-worker"))
    worker["containers"][0]["env"].append(
        {"name": "SHOP_NOTIFICATION_SMTP__HOSTNAME", "value": "x"}
    )
    worker["containers"][0]["env"].append({"name": "SHOP_ORDER_PORT", "value": "8001"})

    assert unknown(changed) == {
        "notification-worker/notification-worker": [
            "SHOP_NOTIFICATION_SMTP__HOSTNAME",
            "SHOP_ORDER_PORT",
        ]
    }


def strays(objects: list[Manifest]) -> list[str]:
    """Containers that are not the shop's processes get none of the shop's variables."""
    ours = {id(r.container) for r in shop_containers(objects)}
    return [
        f"{workload['metadata']['name']}/{container['name']}: {variable}"
        for workload in workloads(objects)
        for container in containers(workload)
        if id(container) not in ours
        for variable in container_env(container, objects)
        if variable.startswith("SHOP_")
    ]


def test_only_the_shop_s_processes_get_its_variables(objects: list[Manifest]) -> None:
    assert strays(objects) == []


def test_a_shop_variable_given_to_another_container_is_caught(objects: list[Manifest]) -> None:
    changed = copy.deepcopy(objects)
    pod_spec(named_object(changed, "Deployment", "order-api"))["containers"].append(
        {"name": "sidecar", "image": "busybox", "env": [{"name": "SHOP_ORDER_PORT", "value": "1"}]}
    )

    assert strays(changed) == ["order-api/sidecar: SHOP_ORDER_PORT"]


def unsaid(objects: list[Manifest]) -> dict[str, list[str]]:
    found = {
        r.name: unnamed_environments(r.env, r.process.settings) for r in shop_containers(objects)
    }
    return {name: variables for name, variables in found.items() if variables}


def test_every_container_says_its_environment(objects: list[Manifest]) -> None:
    assert unsaid(objects) == {}


def test_a_container_that_does_not_say_its_environment_is_caught(
    objects: list[Manifest],
) -> None:
    changed = copy.deepcopy(objects)
    worker = pod_spec(named_object(changed, "Deployment", "notification-worker"))
    worker["containers"][0].pop("envFrom")
    worker["containers"][0]["env"].append({"name": "SHOP_NOTIFICATION_ENVIRONMENT", "value": ""})

    assert unsaid(changed) == {
        "notification-worker/notification-worker": ["SHOP_NOTIFICATION_ENVIRONMENT"]
    }


def test_every_process_would_start_in_production(objects: list[Manifest]) -> None:
    assert [p for running in shop_containers(objects) for p in start_problems(running)] == []


@pytest.mark.parametrize(
    ("container", "variable", "problem"),
    [
        ("payment-worker", "SHOP_PAYMENT_MESSAGING__NAMESPACE", "NAMESPACE is empty"),
        (
            "payment-worker",
            "SHOP_PAYMENT_SHOP_GATEWAY_API_KEY",
            "SHOP_PAYMENT_SHOP_GATEWAY_API_KEY must not be the development value",
        ),
        (
            "payment-api",
            "SHOP_PAYMENT_WEBHOOK_SECRETS",
            "SHOP_PAYMENT_WEBHOOK_SECRETS[0] must not be the development value",
        ),
        (
            "payment-api",
            "SHOP_PAYMENT_DATABASE_URL",
            "SHOP_PAYMENT_DATABASE_URL is left at the container",
        ),
        ("payment-api", "SHOP_PAYMENT_HOST", "SHOP_PAYMENT_HOST is left at the container"),
        (
            "payment-api",
            "SHOP_PAYMENT_WORKER_HEALTH_HOST",
            "SHOP_PAYMENT_WORKER_HEALTH_HOST is left at the container",
        ),
    ],
)
def test_a_setting_production_needs_and_lacks_is_caught(
    objects: list[Manifest], container: str, variable: str, problem: str
) -> None:
    running = next(r for r in shop_containers(objects) if r.name == f"{container}/{container}")
    lacking = Running(
        running.workload,
        running.container,
        running.process,
        {name: value for name, value in running.env.items() if name != variable},
    )

    assert any(problem in found for found in start_problems(lacking))
