"""``shopctl demo``: realistic traffic through the running shop (the devstack's load
generator, :mod:`shop.devstack.load`), with a live count and a summary. The devstack is a
development tool, never in the shop's image: where it is not installed the command says so."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Final

import typer
from rich.console import Console, Group
from rich.live import Live
from rich.table import Table

from shop.console.shopctl.terminal import (
    Json,
    fail,
    one_line_failures,
    out,
    run,
    settings,
    show_json,
)
from shop.ops.render import jsonable, seconds

if TYPE_CHECKING:
    from shop.devstack.load import DemoProgress, DemoSummary

DEMO_MISSING: Final = (
    "shopctl demo needs the development stack (make install): it runs against make run"
)


def progress_table(progress: DemoProgress) -> Table:
    def unknown(value: int | None) -> str:
        return "?" if value is None else str(value)

    table = Table(title=f"demo: {progress.orders} orders, {seconds(progress.elapsed_seconds)}")
    for column in ("placed", "refused", "paid", "e-mails sent", "retries", "dead letters"):
        table.add_column(column, justify="right")
    table.add_row(
        f"{progress.placed}/{progress.orders}",
        str(progress.refused),
        f"{progress.paid}/{progress.placed}",
        f"{progress.emails_sent}/{progress.placed * 2}",
        unknown(progress.retries),
        unknown(progress.dead_letters),
    )
    return table


def summary_tables(summary: DemoSummary) -> Group:
    counts = Table(title=f"demo summary ({seconds(summary.seconds)})")
    counts.add_column("")
    counts.add_column("count", justify="right")
    for name, value in (
        ("orders", summary.orders),
        ("placed", summary.placed),
        ("refused at checkout", summary.refused),
        ("payments sent", summary.payments_sent),
        ("paid", summary.paid),
        ("confirmations sent", summary.confirmations),
        ("receipts sent", summary.receipts),
        ("retries", summary.retries),
        ("failed tries", summary.failed_tries),
        ("dead letters", summary.dead_letters),
    ):
        counts.add_row(name, str(value))
    latencies = Table(title="latencies")
    for column in ("", "count", "p50", "p95", "p99", "max"):
        latencies.add_column(column, justify="right" if column else "left")
    for name, latency in (
        ("checkout", summary.checkout),
        ("order → confirmation", summary.order_to_confirmation),
        ("payment → receipt", summary.payment_to_receipt),
    ):
        if latency is None:
            latencies.add_row(name, "0", "-", "-", "-", "-")
            continue
        latencies.add_row(
            name,
            str(latency.count),
            seconds(latency.p50),
            seconds(latency.p95),
            seconds(latency.p99),
            seconds(latency.max),
        )
    return Group(counts, latencies)


def demo_command(  # noqa: PLR0917 - typer reads each option from a parameter
    orders: Annotated[int, typer.Option(min=1, help="How many orders to place.")] = 200,
    concurrency: Annotated[int, typer.Option(min=1, help="Requests at once.")] = 16,
    email_latency: Annotated[
        str | None,
        typer.Option(help="Make the SMTP sink take LOW-HIGH seconds per e-mail (0.3-3)."),
    ] = None,
    email_failure: Annotated[
        float | None,
        typer.Option(min=0, max=1, help="Make the SMTP sink refuse this share of e-mails."),
    ] = None,
    within: Annotated[
        float, typer.Option(min=1, help="Seconds to wait for every order to be done.")
    ] = 600.0,
    seed: Annotated[int | None, typer.Option(help="Repeat the same choice of products.")] = None,
    as_json: Json = False,
) -> None:
    """Place, pay and follow many orders end to end, with a live count, then summarise:
    counts, retries, dead letters, latency percentiles."""
    # Imported here, not with the module: the console and shopctl load nothing of the
    # devstack (it stays out of the shop's image), and only this command needs it.
    try:
        from shop.devstack.load import parse_latency, run_demo  # noqa: PLC0415
    except ImportError:
        fail(DEMO_MISSING)
    with one_line_failures():
        latency = None if email_latency is None else parse_latency(email_latency)
    live_console = Console(stderr=True, markup=False) if as_json else out
    with Live(console=live_console, auto_refresh=False, transient=as_json) as live:

        def show(progress: DemoProgress) -> None:
            live.update(progress_table(progress), refresh=True)

        summary = run(
            run_demo(
                settings(),
                orders=orders,
                concurrency=concurrency,
                email_latency=latency,
                email_failure=email_failure,
                within=within,
                on_progress=show,
                seed=seed,
            )
        )
    if as_json:
        show_json({**jsonable(summary), "complete": summary.complete})
    else:
        out.print()
        out.print(summary_tables(summary))
    if not summary.complete:
        fail("demo incomplete: " + "; ".join(summary.problems))
