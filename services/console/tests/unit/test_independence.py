"""The console (with ``shopctl``) and the operators' library, ``shop.ops``, neither depend
on nor import any other service: what they know of order-, payment- and
notification-service comes over those services' public interfaces and from the AsyncAPI
documents the contracts library ships. Nor do they need the embedded infrastructure
(``shop.devstack``), which stays out of the shop's image."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from importlib.metadata import requires

OTHER_SERVICES = ("order", "payment", "notification")
_REQUIRED_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
"""The distribution's name at the start of a requirement (``shop-devstack``, ``httpx>=…``)."""

# Every module of both packages but their __main__ modules, which run a program when
# imported; then the names of all the modules that importing them loaded.
IMPORT_EVERYTHING = """
import importlib, json, pkgutil, sys

import shop.console, shop.ops

for package in (shop.ops, shop.console):
    for module in pkgutil.walk_packages(package.__path__, f"{package.__name__}."):
        if not module.name.endswith(".__main__"):
            importlib.import_module(module.name)
print(json.dumps(sorted(sys.modules)))
"""


def is_another_service(module: str) -> bool:
    return module.split(".")[:2] in [["shop", service] for service in OTHER_SERVICES]


def is_embedded_infrastructure(module: str) -> bool:
    return module.split(".")[:2] == ["shop", "devstack"]


def _name(requirement: str) -> str:
    found = _REQUIRED_NAME.match(requirement)
    assert found, requirement
    return found.group().lower()


def test_importing_every_module_of_the_console_and_of_shop_ops_loads_no_other_service() -> None:
    # A process of its own: this one has imported the services for other tests.
    result = subprocess.run(
        [sys.executable, "-c", IMPORT_EVERYTHING],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    loaded = json.loads(result.stdout)

    assert {"shop.ops.lag", "shop.console.shopctl.app", "shop.console.api.app"} <= set(loaded)
    assert [module for module in loaded if is_another_service(module)] == []
    assert [module for module in loaded if is_embedded_infrastructure(module)] == []


def test_neither_package_depends_on_another_service() -> None:
    for package in ("shop-ops", "shop-console"):
        names = {_name(line) for line in requires(package) or []}
        assert names.isdisjoint({f"shop-{service}" for service in OTHER_SERVICES}), package
        assert "shop-devstack" not in names, package
