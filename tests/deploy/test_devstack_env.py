"""``make run`` says where each of its processes runs: every settings class a process of
devstack.toml reads is told ``development`` (the settings have no default), and so are
``shopctl`` and the console through the env file make run writes."""

from __future__ import annotations

import tomllib
from typing import Any

from .processes import SETTINGS_OF, SHOPCTL_SETTINGS
from .repository import ROOT
from .settings_env import environment_variable

PROCFILE = ROOT / "devstack.toml"


def procfile() -> dict[str, Any]:
    return tomllib.loads(PROCFILE.read_text())


def unsaid(document: dict[str, Any]) -> list[str]:
    shop_env = document["shop_env"]["env"]
    found = []
    for name, spec in document["process"].items():
        command = spec["command"]
        module = command[command.index("-m") + 1] if "-m" in command else ""
        package = ".".join(module.split(".")[:2])
        env = dict(spec.get("env", {}))
        if "SHOP_OPS_ENV_FILE" in env:  # the rest of its settings come from shop.env
            env = shop_env | env
        found += [
            f"{name}: {variable}"
            # A process of no service (the development gateway) reads none of these.
            for variable in map(environment_variable, SETTINGS_OF.get(package, ()))
            if env.get(variable) != "development"
        ]
    found += [
        f"shop.env: {variable}"
        for variable in map(environment_variable, SHOPCTL_SETTINGS)
        if shop_env.get(variable) != "development"
    ]
    return found


def test_every_process_of_make_run_runs_as_development() -> None:
    assert unsaid(procfile()) == []


def test_a_process_that_does_not_say_its_environment_is_caught() -> None:
    document = procfile()
    del document["process"]["payment-worker"]["env"]["SHOP_PAYMENT_ENVIRONMENT"]
    del document["shop_env"]["env"]["SHOP_OPS_ENVIRONMENT"]

    assert unsaid(document) == [
        "payment-worker: SHOP_PAYMENT_ENVIRONMENT",
        "console: SHOP_OPS_ENVIRONMENT",
        "shop.env: SHOP_OPS_ENVIRONMENT",
    ]
