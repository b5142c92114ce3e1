"""The committed AsyncAPI documents (``shop.contracts.asyncapi``): one per service, valid
AsyncAPI 3.0.0, carrying the contracts' snapshot schemas, and what the code describes now;
a contract change they do not reflect fails ``python -m shop.messaging.asyncapi check``."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft7Validator

from shop.contracts.snapshots import DEFAULT_SNAPSHOT_DIR
from shop.messaging.asyncapi.documents import (
    DEFAULT_DOCUMENT_DIR,
    UPDATE_COMMAND,
    check,
    discover,
    render,
)

ASYNCAPI_SCHEMA = Path(__file__).parent / "asyncapi_spec" / "3.0.0.json"
COMPONENT_NAME = re.compile(r"^[\w\d\.\-_]+$")
SERVICES = ["notification-service", "order-service", "payment-service"]
CONTRACTS_ROOT = DEFAULT_SNAPSHOT_DIR.parent


def committed(service: str) -> dict[str, Any]:
    document: dict[str, Any] = json.loads((DEFAULT_DOCUMENT_DIR / f"{service}.json").read_text())
    return document


def test_every_service_has_its_committed_document_and_the_code_agrees() -> None:
    services = discover()

    report = check(DEFAULT_DOCUMENT_DIR, services)

    assert [service.name for service in services] == SERVICES
    assert report.passed, f"{report}: run `{UPDATE_COMMAND}` and commit the documents"


@pytest.mark.parametrize("service", SERVICES)
def test_the_committed_document_is_valid_asyncapi_3(service: str) -> None:
    document = committed(service)
    validator = Draft7Validator(json.loads(ASYNCAPI_SCHEMA.read_text()))

    errors = [f"{list(e.absolute_path)}: {e.message}" for e in validator.iter_errors(document)]

    assert errors == []
    # The JSON Schema checks only components whose names match its pattern: all must.
    for section, components in document["components"].items():
        assert all(COMPONENT_NAME.match(name) for name in components), section


def test_the_asyncapi_schema_refuses_what_asyncapi_3_does_not_allow() -> None:
    # Shows the validation above is not vacuous: the schema's references resolve offline.
    document = committed("order-service")
    [operation, *_] = document["operations"].values()
    operation["action"] = "publish"  # AsyncAPI 2's word
    del document["info"]["version"]
    validator = Draft7Validator(json.loads(ASYNCAPI_SCHEMA.read_text()))

    errors = {tuple(error.absolute_path) for error in validator.iter_errors(document)}

    assert ("info",) in errors
    assert any(path[:1] == ("operations",) for path in errors)


@pytest.mark.parametrize("service", SERVICES)
def test_each_envelope_schema_in_the_document_is_its_contracts_snapshot(service: str) -> None:
    schemas = committed(service)["components"]["schemas"]
    envelopes = [name for name in schemas if (DEFAULT_SNAPSHOT_DIR / f"{name}.json").exists()]
    assert envelopes

    for contract_id in envelopes:
        snapshot = json.loads((DEFAULT_SNAPSHOT_DIR / f"{contract_id}.json").read_text())
        for name, definition in {contract_id: snapshot, **snapshot.pop("$defs", {})}.items():
            moved = json.dumps(definition).replace("#/$defs/", "#/components/schemas/")
            assert schemas[name] == json.loads(moved), f"{service}: {name}"


def test_a_document_of_no_service_or_a_missing_one_fails(tmp_path: Path) -> None:
    shutil.copytree(DEFAULT_DOCUMENT_DIR, tmp_path, dirs_exist_ok=True)
    (tmp_path / "order-service.json").unlink()
    (tmp_path / "stock-service.json").write_text(render(committed("payment-service")))

    report = check(tmp_path, discover())

    assert not report.passed
    assert report.missing == [tmp_path / "order-service.json"]
    assert report.unknown == [tmp_path / "stock-service.json"]
    assert report.stale == []


@pytest.fixture
def contracts_copy(tmp_path: Path) -> Path:
    copy = tmp_path / "contracts"
    for folder in ("src", "schemas"):
        shutil.copytree(CONTRACTS_ROOT / folder, copy / folder)
    return copy


def run_check(copy: Path, *args: str) -> subprocess.CompletedProcess[str]:
    # The copy comes first on the path, so `shop.contracts` (and with it the documents'
    # package, the default folder) is imported from it.
    env = {**os.environ, "PYTHONPATH": str(copy / "src"), "COLUMNS": "200"}
    return subprocess.run(
        [sys.executable, "-m", "shop.messaging.asyncapi", "check", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_a_contract_change_not_in_the_documents_fails_until_they_are_updated(
    contracts_copy: Path,
) -> None:
    orders = contracts_copy / "src" / "shop" / "contracts" / "orders.py"
    text = orders.read_text()
    placed_at = "    placed_at: AwareDatetime\n"
    assert placed_at in text
    orders.write_text(text.replace(placed_at, f"{placed_at}    gift_message: str | None = None\n"))

    stale = run_check(contracts_copy)

    assert stale.returncode == 1
    documents = contracts_copy / "src" / "shop" / "contracts" / "asyncapi"
    for service in SERVICES:  # order-service sends OrderCreated, the two others read it
        assert f"STALE {documents / service}.json" in stale.stderr
    assert f"run `{UPDATE_COMMAND}`" in stale.stderr

    updated = run_check(contracts_copy, "--update")
    assert updated.returncode == 0, updated.stderr
    assert "gift_message" in (documents / "order-service.json").read_text()

    again = run_check(contracts_copy)
    assert again.returncode == 0, again.stderr
    assert f"match the code in {documents}" in again.stdout
