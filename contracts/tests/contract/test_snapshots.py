import json
import shutil
from pathlib import Path

from shop.contracts.snapshots import DEFAULT_SNAPSHOT_DIR, check, current_schemas, render


def test_the_committed_snapshots_match_the_contracts():
    report = check(DEFAULT_SNAPSHOT_DIR)

    assert report.passed, report
    assert report.outdated == [], "run `python -m shop.contracts check --update` and commit"


def test_a_contract_without_a_snapshot_fails(tmp_path: Path):
    shutil.copytree(DEFAULT_SNAPSHOT_DIR, tmp_path, dirs_exist_ok=True)
    (tmp_path / "order.paid.v1.json").unlink()

    report = check(tmp_path)

    assert not report.passed
    assert report.unsnapshotted == ["order.paid.v1"]


def test_a_removed_contract_fails(tmp_path: Path):
    shutil.copytree(DEFAULT_SNAPSHOT_DIR, tmp_path, dirs_exist_ok=True)
    retired = current_schemas()["order.paid.v1"]
    (tmp_path / "order.refunded.v1.json").write_text(render(retired))

    report = check(tmp_path)

    assert not report.passed
    assert report.removed == ["order.refunded.v1"]


def test_a_compatible_difference_passes_and_asks_for_a_refresh(tmp_path: Path):
    shutil.copytree(DEFAULT_SNAPSHOT_DIR, tmp_path, dirs_exist_ok=True)
    snapshot = json.loads((tmp_path / "payment.failed.v1.json").read_text())
    snapshot["description"] = "an older wording"
    (tmp_path / "payment.failed.v1.json").write_text(render(snapshot))

    report = check(tmp_path)

    assert report.passed
    assert report.outdated == ["payment.failed.v1"]
