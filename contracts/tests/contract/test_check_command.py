"""``python -m shop.contracts check`` run for real, on a temporary copy of the contracts."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from shop.contracts.snapshots import DEFAULT_SNAPSHOT_DIR

CONTRACTS_ROOT = DEFAULT_SNAPSHOT_DIR.parent


@pytest.fixture
def contracts_copy(tmp_path: Path) -> Path:
    copy = tmp_path / "contracts"
    shutil.copytree(CONTRACTS_ROOT / "src", copy / "src")
    shutil.copytree(CONTRACTS_ROOT / "schemas", copy / "schemas")
    return copy


def edit(copy: Path, module: str, old: str, new: str) -> None:
    path = copy / "src" / "shop" / "contracts" / module
    text = path.read_text()
    assert old in text, f"{old!r} not in {module}"
    path.write_text(text.replace(old, new, 1))


def run_check(copy: Path, *args: str) -> subprocess.CompletedProcess[str]:
    # The copy comes first on the path, so `shop.contracts` is imported from it.
    env = {**os.environ, "PYTHONPATH": str(copy / "src"), "COLUMNS": "200"}
    return subprocess.run(
        [sys.executable, "-m", "shop.contracts", "check", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_the_committed_contracts_pass(contracts_copy: Path):
    result = run_check(contracts_copy)

    assert result.returncode == 0, result.stderr
    assert "compatible" in result.stdout
    assert str(contracts_copy / "schemas") in result.stdout.replace("\n", "")


def test_removing_a_required_field_fails_naming_the_field(contracts_copy: Path):
    edit(contracts_copy, "orders.py", "    customer_email: EmailAddress\n", "")

    result = run_check(contracts_copy)

    assert result.returncode == 1
    assert "BREAKING order.created.v1: payload.customer_email: field removed" in result.stderr
    assert "BREAKING order.paid.v1: payload.customer_email: field removed" in result.stderr


def test_an_optional_field_passes_and_update_refreshes_the_snapshot(contracts_copy: Path):
    edit(
        contracts_copy,
        "orders.py",
        "    placed_at: AwareDatetime\n",
        "    placed_at: AwareDatetime\n    gift_message: str | None = None\n",
    )

    first = run_check(contracts_copy)
    assert first.returncode == 0, first.stderr
    assert "compatible change in order.created.v1" in first.stdout

    updated = run_check(contracts_copy, "--update")
    assert updated.returncode == 0, updated.stderr
    snapshot = (contracts_copy / "schemas" / "order.created.v1.json").read_text()
    assert "gift_message" in snapshot

    again = run_check(contracts_copy)
    assert again.returncode == 0
    assert "compatible change" not in again.stdout
