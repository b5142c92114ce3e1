"""``python -m shop.messaging.asyncapi``: list what each service sends and receives, check
or update the committed AsyncAPI documents."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from shop.messaging.asyncapi.documents import (
    DEFAULT_DOCUMENT_DIR,
    ENTRY_POINT_GROUP,
    UPDATE_COMMAND,
    check,
    discover,
    write_documents,
)
from shop.messaging.naming import Naming

app = typer.Typer(add_completion=False, no_args_is_help=True, help=__doc__)
out = Console()
err = Console(stderr=True)

DocumentDir = Annotated[
    Path,
    typer.Option("--documents-dir", help="Folder of the committed AsyncAPI documents."),
]


def _say(console: Console, text: str) -> None:
    console.print(text, markup=False, highlight=False, soft_wrap=True)


@app.command("list")
def list_services() -> None:
    """Show every service found, with the topics it publishes to and consumes from."""
    naming = Naming()
    table = Table("service", "publishes", "consumer group", "consumes")
    for service in discover():
        published = "\n".join(naming.topic(contract) for contract in service.publishes)
        groups = "\n".join(router.group for router in service.routers)
        consumed = "\n".join(
            naming.topic(subscriber.contract) for router in service.routers for subscriber in router
        )
        table.add_row(service.name, published or "-", groups or "-", consumed or "-")
    out.print(table)


@app.command("check")
def check_documents(
    documents_dir: DocumentDir = DEFAULT_DOCUMENT_DIR,
    update: Annotated[
        bool, typer.Option("--update", help="Rewrite the documents from the code.")
    ] = False,
) -> None:
    """Fail when a committed document differs from what the code describes."""
    services = discover()
    if not services:
        _say(err, f"no service declares its bus (entry point group {ENTRY_POINT_GROUP})")
        raise typer.Exit(code=1)
    if update:
        for path in write_documents(documents_dir, services):
            _say(out, f"wrote {path}")
        return

    report = check(documents_dir, services)
    for path in report.stale:
        _say(err, f"STALE {path}: the code describes another document; run `{UPDATE_COMMAND}`")
    for path in report.missing:
        _say(err, f"MISSING {path}: the service has no document; run `{UPDATE_COMMAND}`")
    for path in report.unknown:
        _say(
            err,
            f"UNKNOWN {path}: no service declares it in {ENTRY_POINT_GROUP}; "
            f"`{UPDATE_COMMAND}` removes it",
        )
    if not report.passed:
        _say(err, "Commit the AsyncAPI documents with the change to the contracts or routers.")
        raise typer.Exit(code=1)
    _say(out, f"AsyncAPI documents of {len(services)} services match the code in {documents_dir}")
