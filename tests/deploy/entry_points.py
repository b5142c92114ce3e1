"""Whether a command names something the installed code can run: a ``python -m`` module
(and, for a command-line app, its subcommand), or a console script of a workspace
package's ``[project.scripts]``."""

from __future__ import annotations

import ast
import functools
import glob
import importlib
import importlib.util
import subprocess
import sys
import tomllib
from collections.abc import Sequence
from pathlib import Path

import typer

from .repository import ROOT


def workspace_pyprojects() -> list[Path]:
    """The pyproject.toml of every member of the uv workspace (its members' globs)."""
    root = tomllib.loads((ROOT / "pyproject.toml").read_text())
    members: list[str] = root["tool"]["uv"]["workspace"]["members"]
    found: list[Path] = []
    for pattern in members:
        for folder in sorted(glob.glob(str(ROOT / pattern))):
            pyproject = Path(folder) / "pyproject.toml"
            if pyproject.is_file():
                found.append(pyproject)
    return found


def console_scripts() -> dict[str, list[str]]:
    """Script name → the ``module:function`` targets the workspace declares for it."""
    scripts: dict[str, list[str]] = {}
    for pyproject in workspace_pyprojects():
        project = tomllib.loads(pyproject.read_text()).get("project", {})
        for name, target in project.get("scripts", {}).items():
            scripts.setdefault(name, []).append(target)
    return scripts


def script_problems(name: str) -> list[str]:
    """Why ``name`` is not a console script that resolves to a callable (none: it is)."""
    targets = console_scripts().get(name)
    if not targets:
        return [f"no workspace package declares the script {name!r}"]
    problems = []
    for target in targets:
        module_name, _, attribute = target.partition(":")
        try:
            function = getattr(importlib.import_module(module_name), attribute)
        except (ImportError, AttributeError) as error:
            problems.append(f"script {name!r} → {target}: {error!r}")
            continue
        if not callable(function):
            problems.append(f"script {name!r} → {target} is not callable")
    return problems


def command_problems(command: Sequence[str]) -> list[str]:
    """Why ``command`` would not start anything (none: it would)."""
    if not command:
        return ["the command is empty"]
    if command[0] == "python":
        if len(command) < 3 or command[1] != "-m":
            return [f"{list(command)}: only `python -m MODULE …` is used"]
        return _module_problems(command[2], tuple(command[3:]))
    return script_problems(command[0])


def _module_problems(module: str, arguments: tuple[str, ...]) -> list[str]:
    try:
        spec = importlib.util.find_spec(module)
    except ModuleNotFoundError:
        spec = None
    if spec is None:
        return [f"no module {module!r}"]
    if spec.submodule_search_locations is not None:
        # A package runs its __main__ module.
        if importlib.util.find_spec(f"{module}.__main__") is None:
            return [f"package {module!r} has no __main__ module"]
    elif spec.origin is None or '__name__ == "__main__"' not in Path(spec.origin).read_text():
        return [f"module {module!r} does nothing when run (no __main__ guard)"]
    if arguments and not _subcommand_exists(module, arguments[0]):
        return [f"`python -m {module}` has no command {arguments[0]!r}"]
    return []


def _subcommand_exists(module: str, subcommand: str) -> bool:
    commands = _typer_commands(module)
    if commands is not None:
        return subcommand in commands
    return _answers_help(module, subcommand)


@functools.cache
def _typer_commands(module: str) -> frozenset[str] | None:
    """The commands of the typer app a package's ``__main__`` runs (``from x import app``
    then ``app()``), read without running it; None for anything else."""
    spec = importlib.util.find_spec(f"{module}.__main__")
    if spec is None or spec.origin is None:
        return None
    tree = ast.parse(Path(spec.origin).read_text())
    imported = {
        alias.asname or alias.name: (node.module, alias.name)
        for node in tree.body
        if isinstance(node, ast.ImportFrom) and node.module
        for alias in node.names
    }
    for node in tree.body:
        if (
            isinstance(node, ast.Expr)
            and isinstance(node.value, ast.Call)
            and isinstance(node.value.func, ast.Name)
            and node.value.func.id in imported
        ):
            source, name = imported[node.value.func.id]
            app = getattr(importlib.import_module(source), name)
            if isinstance(app, typer.Typer):
                commands = getattr(typer.main.get_command(app), "commands", None)
                if isinstance(commands, dict):
                    return frozenset(commands)
    return None


@functools.cache
def _answers_help(module: str, subcommand: str) -> bool:
    """Asks the command-line app itself: ``--help`` of a command it lacks fails."""
    done = subprocess.run(
        [sys.executable, "-m", module, subcommand, "--help"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    return done.returncode == 0
