"""The compose files against the Compose Specification's JSON Schema (vendored in
schemas/compose-spec): each file as written, and each variant as docker compose merges
and interpolates it with the example settings."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml
from jsonschema import Draft202012Validator

from .compose_model import ENV_EXAMPLE, Variant, load, read_dotenv, variants
from .repository import COMPOSE_DIR, SCHEMAS_DIR

SCHEMA = SCHEMAS_DIR / "compose-spec" / "compose-spec.json"


def errors(document: dict[str, Any]) -> list[str]:
    validator = Draft202012Validator(json.loads(SCHEMA.read_text()))
    return sorted(
        f"{'/'.join(map(str, error.absolute_path))}: {error.message}"
        for error in validator.iter_errors(document)
    )


@pytest.mark.parametrize("path", sorted(COMPOSE_DIR.glob("*.yaml")), ids=lambda p: p.name)
def test_each_file_is_valid_by_the_specification(path: Path) -> None:
    assert errors(load(path)) == []


@pytest.mark.parametrize("variant", variants(), ids=lambda v: v.name)
def test_each_variant_as_merged_is_valid_by_the_specification(variant: Variant) -> None:
    assert errors(variant.model(read_dotenv(ENV_EXAMPLE))) == []


def test_a_file_the_specification_refuses_is_caught(tmp_path: Path) -> None:
    shutil.copytree(COMPOSE_DIR, tmp_path, dirs_exist_ok=True)
    broken = tmp_path / "compose.yaml"
    document = yaml.safe_load(broken.read_text())
    document["services"]["order-api"]["depends_on"]["postgres"]["condition"] = "service_up"
    document["services"]["order-api"]["restart_policy"] = "always"
    broken.write_text(yaml.safe_dump(document))

    found = errors(load(broken))

    assert any("service_up" in error for error in found)
    assert any("restart_policy" in error for error in found)
