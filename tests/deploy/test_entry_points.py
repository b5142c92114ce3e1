"""Every command the deployment files run names an entry point the code has: a
``python -m`` module (with its subcommand) or a console script of the workspace, found
from the code and the packages' ``[project.scripts]``, not from a list kept here."""

from __future__ import annotations

import pytest

from .compose_model import ENV_EXAMPLE, read_dotenv, variants
from .entry_points import command_problems, console_scripts, script_problems
from .manifests import Manifest
from .shop_k8s import shop_containers


def compose_commands() -> dict[str, list[str]]:
    """What each compose service of the shop's image runs (entrypoint, then command)."""
    found: dict[str, list[str]] = {}
    variables = read_dotenv(ENV_EXAMPLE)
    for variant in variants():
        model = variant.model(variables)
        image = variables["SHOP_IMAGE"]
        for name, service in model["services"].items():
            if service.get("image") != image:
                continue
            entrypoint = list(service.get("entrypoint", []))
            found[f"{variant.name}:{name}"] = entrypoint + list(service.get("command", []))
    return found


@pytest.mark.parametrize(("service", "command"), sorted(compose_commands().items()))
def test_each_compose_service_runs_a_command_that_exists(service: str, command: list[str]) -> None:
    assert command_problems(command) == []


def test_each_container_of_the_overlay_runs_a_command_that_exists(
    objects: list[Manifest],
) -> None:
    problems = {
        running.name: command_problems(running.container["command"])
        for running in shop_containers(objects)
    }

    assert {name: found for name, found in problems.items() if found} == {}


def test_shopctl_is_a_script_the_workspace_declares() -> None:
    assert "shopctl" in console_scripts()
    assert script_problems("shopctl") == []


@pytest.mark.parametrize(
    ("command", "problem"),
    [
        (["python", "-m", "shop.order.nowhere"], "no module"),
        (["python", "-m", "shop.order", "migrat"], "has no command 'migrat'"),
        (["python", "-m", "shop.order.settings"], "does nothing when run"),
        (["shopctI"], "no workspace package declares"),
        (["python", "shop/order/worker.py"], "only `python -m MODULE"),
    ],
)
def test_a_command_that_names_nothing_is_caught(command: list[str], problem: str) -> None:
    problems = command_problems(command)

    assert len(problems) == 1
    assert problem in problems[0]
