"""``shopctl reconcile``: the gateways' records against the shop's payments, orders and
e-mails; what was repaired, and what a person must settle. ``shopctl refunded-by-hand``:
one thing a person settles, a refund made outside the gateway."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

import typer
from rich.table import Table

from shop.console.shopctl.bus import counts_table
from shop.console.shopctl.terminal import Json, out, run, settings, show_json
from shop.ops.reconciliation import reconcile
from shop.ops.refunds import record_refund_by_hand


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


def refunded_by_hand_command(
    order: Annotated[str, typer.Argument(metavar="ORDER", help="The order's id or number (SK-…).")],
    reference: Annotated[
        str, typer.Option("--reference", help="The bank transfer's reference, as the bank gave it.")
    ],
    amount: Annotated[
        int | None,
        typer.Option(min=1, help="What was given back; all that is due when left out."),
    ] = None,
    as_json: Json = False,
) -> None:
    """Record a refund made by hand, outside the gateway (a bank transfer Midtrans cannot
    refund, reported by reconcile as refund_refused): the payment ends refunded, the order
    and the customer are told."""
    recorded = run(record_refund_by_hand(settings(), order, reference=reference, amount=amount))
    if as_json:
        show_json(recorded)
        return
    out.print(
        f"{recorded.order_id}: refund {recorded.reference} recorded, payment {recorded.status}"
    )
