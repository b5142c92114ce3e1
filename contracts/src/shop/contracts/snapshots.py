"""JSON Schema snapshots of every contract, and the check against the committed ones."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from shop.contracts.base import Contract
from shop.contracts.compatibility import Incompatibility, Schema, compare
from shop.contracts.envelope import Envelope
from shop.contracts.registry import iter_contracts

DEFAULT_SNAPSHOT_DIR = Path(__file__).resolve().parents[3] / "schemas"
"""``contracts/schemas`` in the source tree, where the snapshots are committed."""


def wire_schema(contract: type[Contract]) -> Schema:
    """The JSON Schema of a whole message of ``contract``: envelope and payload."""
    envelope: Any = Envelope[contract]  # type: ignore[valid-type]
    schema: Schema = envelope.model_json_schema(mode="validation")
    schema["title"] = contract.contract_id()
    return schema


def current_schemas() -> dict[str, Schema]:
    """Schemas of the contracts as the code defines them now, by contract id."""
    return {contract.contract_id(): wire_schema(contract) for contract in iter_contracts()}


def snapshot_path(directory: Path, contract_id: str) -> Path:
    return directory / f"{contract_id}.json"


def render(schema: Schema) -> str:
    """Stable text of a schema, so that a snapshot diff shows only real changes."""
    return json.dumps(schema, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def load_snapshots(directory: Path) -> dict[str, Schema]:
    snapshots: dict[str, Schema] = {}
    for path in sorted(directory.glob("*.json")):
        snapshots[path.name.removesuffix(".json")] = json.loads(path.read_text())
    return snapshots


def write_snapshots(directory: Path) -> list[Path]:
    """Rewrite the snapshots from the code; drop those of contracts that no longer exist."""
    directory.mkdir(parents=True, exist_ok=True)
    schemas = current_schemas()
    for stale in set(load_snapshots(directory)) - schemas.keys():
        snapshot_path(directory, stale).unlink()
    written = []
    for contract_id, schema in schemas.items():
        path = snapshot_path(directory, contract_id)
        path.write_text(render(schema))
        written.append(path)
    return written


@dataclass
class CheckReport:
    """Outcome of comparing the code's contracts with the committed snapshots."""

    breaking: dict[str, list[Incompatibility]] = field(default_factory=dict)
    removed: list[str] = field(default_factory=list)
    unsnapshotted: list[str] = field(default_factory=list)
    outdated: list[str] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return not (self.breaking or self.removed or self.unsnapshotted)


def check(directory: Path) -> CheckReport:
    """Compare every contract with its snapshot.

    Fails on breaking changes, on a contract that disappeared (consumers still read it)
    and on a contract without a snapshot (nothing would guard it). Compatible changes
    pass and are reported as outdated snapshots to refresh with ``--update``.
    """
    report = CheckReport()
    snapshots = load_snapshots(directory)
    current = current_schemas()
    for contract_id, schema in current.items():
        snapshot = snapshots.get(contract_id)
        if snapshot is None:
            report.unsnapshotted.append(contract_id)
            continue
        problems = compare(snapshot, schema)
        if problems:
            report.breaking[contract_id] = problems
        elif render(snapshot) != render(schema):
            report.outdated.append(contract_id)
    report.removed = sorted(snapshots.keys() - current.keys())
    return report
