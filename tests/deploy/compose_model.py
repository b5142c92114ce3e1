"""The compose files as docker compose reads them: .env's variables, ``${…}``
interpolation, YAML anchors and merge keys, later files merged over earlier ones."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from .repository import COMPOSE_DIR

ENV_EXAMPLE = COMPOSE_DIR / ".env.example"
BASE_FILE = "compose.yaml"

_VARIABLE = re.compile(
    r"\$(?:(?P<escaped>\$)|\{(?P<braced>[A-Za-z_][A-Za-z0-9_]*)(?:(?P<op>:?[-?])(?P<arg>[^}]*))?\}"
    r"|(?P<bare>[A-Za-z_][A-Za-z0-9_]*))"
)


class MissingVariable(ValueError):
    """A ``${NAME:?…}`` whose variable is not set: docker compose stops there too."""


def read_dotenv(path: Path) -> dict[str, str]:
    """KEY=VALUE lines; ``#`` comments; single quotes keep a value as it is, double quotes
    and bare values are interpolated with what came before (as compose's .env is)."""
    variables: dict[str, str] = {}
    for raw in path.read_text().splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        name, _, value = line.partition("=")
        value = value.strip()
        if value.startswith("'") and value.endswith("'") and len(value) >= 2:
            variables[name.strip()] = value[1:-1]
            continue
        if value.startswith('"') and value.endswith('"') and len(value) >= 2:
            value = value[1:-1]
        else:
            value = value.split(" #", 1)[0].strip()
        variables[name.strip()] = interpolate(value, variables)
    return variables


def commented_settings(path: Path) -> dict[str, list[str]]:
    """``# NAME=value`` lines: the alternatives a file documents, by name."""
    found: dict[str, list[str]] = {}
    for raw in path.read_text().splitlines():
        match = re.match(r"^#\s*([A-Z][A-Z0-9_]*)=(\S*)$", raw.strip())
        if match:
            found.setdefault(match[1], []).append(match[2])
    return found


def interpolate(text: str, variables: Mapping[str, str]) -> str:
    def replace(match: re.Match[str]) -> str:
        if match["escaped"]:
            return "$"
        name = match["braced"] or match["bare"]
        value = variables.get(name)
        operator, argument = match["op"], match["arg"] or ""
        unset = value is None or (operator is not None and operator.startswith(":") and not value)
        if operator in {"-", ":-"} and unset:
            return interpolate(argument, variables)
        if operator in {"?", ":?"} and unset:
            raise MissingVariable(f"{name}: {argument}")
        return value or ""

    return _VARIABLE.sub(replace, text)


def variables_used(text: str) -> set[str]:
    """Every variable a file interpolates, with a default or not."""
    return {m["braced"] or m["bare"] for m in _VARIABLE.finditer(text) if not m["escaped"]}


def required_variables(text: str) -> set[str]:
    """The variables a file needs set (``${NAME}``, ``${NAME:?…}``, without a default)."""
    return {
        m["braced"] or m["bare"]
        for m in _VARIABLE.finditer(text)
        if not m["escaped"] and (m["op"] is None or "?" in m["op"])
    }


def load(path: Path) -> dict[str, Any]:
    """One file, anchors and merge keys resolved, not interpolated."""
    document = yaml.safe_load(path.read_text())
    if not isinstance(document, dict):
        raise ValueError(f"{path}: not a compose file")
    return document


def _interpolated(value: Any, variables: Mapping[str, str]) -> Any:
    if isinstance(value, str):
        return interpolate(value, variables)
    if isinstance(value, dict):
        return {key: _interpolated(item, variables) for key, item in value.items()}
    if isinstance(value, list):
        return [_interpolated(item, variables) for item in value]
    return value


def _merged(base: Any, override: Any) -> Any:
    """Mappings merge key by key; anything else the later file gives replaces."""
    if isinstance(base, dict) and isinstance(override, dict):
        merged = dict(base)
        for key, value in override.items():
            merged[key] = _merged(base[key], value) if key in base else value
        return merged
    return override


def _without_extensions(document: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in document.items() if not key.startswith("x-")}


@dataclass(frozen=True)
class Variant:
    """One way to run the stack: its files, in order (COMPOSE_FILE)."""

    name: str
    files: tuple[Path, ...]

    def model(self, variables: Mapping[str, str]) -> dict[str, Any]:
        """The merged, interpolated model docker compose would run."""
        merged: dict[str, Any] = {}
        for path in self.files:
            merged = _merged(merged, _interpolated(_without_extensions(load(path)), variables))
        return merged

    @property
    def compose_file(self) -> str:
        return ":".join(path.name for path in self.files)


def variants(folder: Path = COMPOSE_DIR) -> list[Variant]:
    """The base file with each bus file (every other .yaml of the folder)."""
    return [
        Variant(path.stem, (folder / BASE_FILE, path))
        for path in sorted(folder.glob("*.yaml"))
        if path.name != BASE_FILE
    ]


def environment(service: Mapping[str, Any]) -> dict[str, str]:
    """A service's environment, in either of compose's forms."""
    env = service.get("environment", {})
    if isinstance(env, list):
        return dict(item.partition("=")[::2] for item in env)
    return {str(key): "" if value is None else str(value) for key, value in env.items()}
