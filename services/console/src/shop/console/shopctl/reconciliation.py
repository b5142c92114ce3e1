"""``shopctl reconcile``: the gateways' records against the shop's payments, orders and
e-mails; what was repaired, and what a person must settle."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

import typer
from rich.table import Table

from shop.console.shopctl.bus import counts_table
from shop.console.shopctl.terminal import Json, out, run, settings, show_json
from shop.ops.reconciliation import reconcile


def _since(value: str | None) -> datetime | None:
    if value is None:
        return None
    try:
        since = datetime.fromisoformat(value)
    except ValueError:
        raise typer.BadParameter(f"{value!r} is not an ISO 8601 time") from None
    if since.tzinfo is None:
        raise typer.BadParameter("give a time zone, e.g. 2026-12-01T00:00:00Z")
    return since


def reconcile_command(
    since: Annotated[
        str | None,
        typer.Option(
            "--since",
            help="Payments opened since this time (ISO 8601, with a zone); payment-service's "
            "lookback (7 days) when left out.",
        ),
    ] = None,
    as_json: Json = False,
) -> None:
    """Compare the gateways' records with the payments (repairing what is safe: a missed
    settlement, refund or chargeback), then the payments with the orders and receipts."""
    report = run(reconcile(settings(), _since(since)))
    if as_json:
        show_json(report)
        return
    out.print(
        counts_table(
            f"drift since {report.since} ({report.checked} payments checked)",
            ["kind", "found"],
            [[kind, str(count)] for kind, count in report.drift.items()],
        )
    )
    if report.findings:
        table = Table(title="findings")
        for column in ("kind", "order", "repaired", "detail"):
            table.add_column(column)
        for finding in report.findings:
            table.add_row(
                finding.kind, finding.order_id, "yes" if finding.repaired else "no", finding.detail
            )
        out.print(table)
