"""The shop's code imports without shop.devstack, as it must in the image, which carries
neither the devstack nor the dev dependencies: a module of a service, of the console or of
a library that imports the devstack at import time would fail every command there."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

# Run in a process of its own, with shop.devstack hidden as the image lacks it.
# Migrations' env modules run only under Alembic; __main__ modules start the process; the
# testing modules serve the tests and may use the dev dependencies.
IMPORT_EVERY_MODULE = textwrap.dedent(
    """
    import importlib, json, pkgutil, sys

    sys.modules["shop.devstack"] = None
    import shop

    failed = {}
    for module in pkgutil.walk_packages(shop.__path__, "shop."):
        parts = module.name.split(".")
        if parts[1] == "devstack" or {"__main__", "testing", "migrations"} & set(parts):
            continue
        try:
            importlib.import_module(module.name)
        except Exception as error:
            failed[module.name] = repr(error)
    print(json.dumps(failed))
    """
)


def test_every_module_of_the_image_imports_without_the_devstack() -> None:
    run = subprocess.run(
        [sys.executable, "-c", IMPORT_EVERY_MODULE],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )

    assert json.loads(run.stdout.splitlines()[-1]) == {}
