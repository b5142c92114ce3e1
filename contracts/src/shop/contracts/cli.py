"""``python -m shop.contracts``: list the contracts, check or update their snapshots."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from shop.contracts.base import Command
from shop.contracts.registry import iter_contracts
from shop.contracts.snapshots import DEFAULT_SNAPSHOT_DIR, check, write_snapshots
from shop.contracts.topics import message_topic

app = typer.Typer(add_completion=False, no_args_is_help=True, help=__doc__)
out = Console()
err = Console(stderr=True)

SnapshotDir = Annotated[
    Path,
    typer.Option("--schemas-dir", help="Folder of the committed JSON Schema snapshots."),
]


@app.command("list")
def list_contracts() -> None:
    """Show every contract with its kind and topic."""
    table = Table("contract", "kind", "class", "topic")
    for contract in iter_contracts():
        kind = "command" if issubclass(contract, Command) else "event"
        table.add_row(contract.contract_id(), kind, contract.__name__, message_topic(contract))
    out.print(table)


@app.command("check")
def check_snapshots(
    schemas_dir: SnapshotDir = DEFAULT_SNAPSHOT_DIR,
    update: Annotated[
        bool, typer.Option("--update", help="Rewrite the snapshots from the code.")
    ] = False,
) -> None:
    """Fail on a breaking change against the committed snapshots."""
    if update:
        for path in write_snapshots(schemas_dir):
            out.print(f"wrote {path}")
        return

    report = check(schemas_dir)
    for contract_id, problems in report.breaking.items():
        for problem in problems:
            err.print(f"BREAKING {contract_id}: {problem}", markup=False, highlight=False)
    for contract_id in report.removed:
        err.print(
            f"BREAKING {contract_id}: contract removed; keep it while anything may still send it",
            markup=False,
            highlight=False,
        )
    for contract_id in report.unsnapshotted:
        err.print(
            f"MISSING {contract_id}: no snapshot; run `python -m shop.contracts check --update`",
            markup=False,
            highlight=False,
        )
    for contract_id in report.outdated:
        out.print(f"compatible change in {contract_id}; refresh its snapshot with --update")
    if not report.passed:
        err.print(
            "A breaking change needs a new contract version beside the old one.",
            markup=False,
        )
        raise typer.Exit(code=1)
    out.print(f"contracts compatible with the snapshots in {schemas_dir}")
