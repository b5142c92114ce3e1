"""`shopctl`: operate the running shop from a terminal, through its public interfaces only
(its HTTP APIs, the bus, each service's own database, its workers' health ports).

Where it finds the shop: the `SHOP_OPS_*` variables and the env file `make run` writes
(`.devstack/shop.env`; `SHOP_OPS_ENV_FILE` names another). A failure prints one line to
stderr and exits 1.
"""

from __future__ import annotations

import asyncio
import logging
import sys
from collections.abc import Coroutine, Iterator
from contextlib import contextmanager
from datetime import timedelta
from typing import Annotated, Any, NoReturn, TypeVar

import structlog
import typer
from pydantic import ValidationError
from rich.console import Console, Group
from rich.live import Live
from rich.table import Table
from rich.text import Text

from shop.ops import deadletters as dlq
from shop.ops.consumers import consumer_counts
from shop.ops.demo import DemoProgress, DemoSummary, parse_latency, run_demo
from shop.ops.errors import OpsError
from shop.ops.frontend import CartLine, checkout
from shop.ops.lag import consumer_lag
from shop.ops.mail import captured
from shop.ops.outbox import outbox_status
from shop.ops.payments import Provider, pay
from shop.ops.render import amount, jsonable, moment, seconds, shorten, to_json
from shop.ops.settings import OpsSettings
from shop.ops.timeline import order_timeline
from shop.ops.tokens import customer_token

T = TypeVar("T")

app = typer.Typer(
    name="shopctl",
    help=__doc__,
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode="markdown",
)
dlq_app = typer.Typer(
    help="Dead letters of every consumer group.", no_args_is_help=True, rich_markup_mode="markdown"
)
outbox_app = typer.Typer(
    help="The services' outboxes.", no_args_is_help=True, rich_markup_mode="markdown"
)
app.add_typer(dlq_app, name="dlq")
app.add_typer(outbox_app, name="outbox")

# markup=False: what the shop sends back (error texts with [brackets]) is printed as it is.
out = Console(highlight=False, markup=False)
err = Console(stderr=True, highlight=False, soft_wrap=True, markup=False)

Json = Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")]
ServiceOption = Annotated[
    str | None, typer.Option("--service", help="Only this service's groups (order-service, …).")
]
GroupOption = Annotated[str | None, typer.Option("--group", help="Only this consumer group.")]
TypeOption = Annotated[
    str | None, typer.Option("--type", help="Only this message type (order.created, …).")
]
ErrorOption = Annotated[
    str | None, typer.Option("--error", help="Only this error type (PermanentError, …).")
]
ContainsOption = Annotated[
    str | None,
    typer.Option("--contains", help="Only letters with this text in their error, key or body."),
]


# -- failing in one line --------------------------------------------------------------


def fail(reason: str) -> NoReturn:
    err.print(Text(" ".join(reason.split())), style="red")
    raise typer.Exit(code=1)


@contextmanager
def one_line_failures() -> Iterator[None]:
    """Whatever goes wrong inside ends the command with one line and exit code 1."""
    try:
        yield
    except OpsError as error:
        fail(str(error))
    except ValidationError as error:
        first = error.errors()[0]
        where = "__".join(str(part) for part in first["loc"])
        fail(f"invalid setting SHOP_OPS_{where.upper()}: {first['msg']}")
    except KeyboardInterrupt:
        fail("interrupted")
    except Exception as error:
        if _options.traceback:
            raise
        fail(f"unexpected {type(error).__name__}: {error} (--traceback shows where)")


class _Options:
    traceback = False


_options = _Options()


@app.callback()
def main_options(
    traceback: Annotated[
        bool, typer.Option("--traceback", help="Show where an unexpected failure came from.")
    ] = False,
) -> None:
    _options.traceback = traceback
    # What the libraries underneath log is for the services' logs, not an operator's
    # terminal: only their errors show, on stderr.
    logging.getLogger("aiokafka").setLevel(logging.CRITICAL)
    structlog.configure(
        wrapper_class=structlog.make_filtering_bound_logger(logging.ERROR),
        # Looked up at each logger's making, not now: stderr may be replaced meanwhile.
        logger_factory=lambda *_: structlog.PrintLogger(file=sys.stderr),
    )


def settings() -> OpsSettings:
    with one_line_failures():
        return OpsSettings()


def run(coroutine: Coroutine[Any, Any, T]) -> T:
    with one_line_failures():
        return asyncio.run(coroutine)


def show_json(value: Any) -> None:
    sys.stdout.write(to_json(value) + "\n")


# -- customers and orders -------------------------------------------------------------


@app.command("token")
def token_command(
    customer: Annotated[str, typer.Option(help="The customer's id (the token's sub).")] = (
        "cust_ayu"
    ),
    email: Annotated[str, typer.Option(help="The customer's e-mail address.")] = (
        "ayu@example.com"
    ),
    hours: Annotated[float, typer.Option(min=0.01, help="How long the token is valid.")] = 12.0,
) -> None:
    """Print a customer token for order-service's API (development: signed with
    `SHOP_OPS_JWT_SECRET`, as the identity provider would)."""
    token = customer_token(settings(), customer, email, valid_for=timedelta(hours=hours))
    sys.stdout.write(token + "\n")


@app.command("order")
def order_command(  # noqa: PLR0917 - typer reads each option from a parameter
    sku: Annotated[
        list[str], typer.Option("--sku", help="A product to order (repeat for more lines).")
    ],
    qty: Annotated[
        list[int] | None,
        typer.Option(
            "--qty", min=1, help="The quantities of the --sku lines, in order (default 1)."
        ),
    ] = None,
    customer: Annotated[str, typer.Option(help="Who orders (the token's sub).")] = "cust_ayu",
    email: Annotated[str, typer.Option(help="Their e-mail address.")] = "ayu@example.com",
    idempotency_key: Annotated[
        str | None,
        typer.Option(help="The checkout's Idempotency-Key (default: a new one)."),
    ] = None,
    as_json: Json = False,
) -> None:
    """Place an order through order-service's checkout, as a frontend would."""
    quantities = list(qty or [])
    if len(quantities) > len(sku):
        fail(f"each --qty belongs to a --sku ({len(sku)} sku, {len(quantities)} qty)")
    quantities += [1] * (len(sku) - len(quantities))
    lines = [CartLine(s.strip().upper(), q) for s, q in zip(sku, quantities, strict=True)]
    placed = run(
        checkout(
            settings(), lines, customer_id=customer, email=email, idempotency_key=idempotency_key
        )
    )
    if as_json:
        show_json(placed)
        return
    replay = " (the answer to an earlier checkout with this key)" if placed.replayed else ""
    out.print(
        f"order {placed.id}  {placed.number}  {amount(placed.total, placed.currency)}  "
        f"{placed.status}{replay}"
    )


@app.command("pay")
def pay_command(  # noqa: PLR0917 - typer reads each option from a parameter
    order: Annotated[str, typer.Argument(metavar="ORDER", help="The order's id or number (SK-…).")],
    provider: Annotated[
        Provider, typer.Option(help="Which gateway's notifications to send.")
    ] = Provider.SHOP,
    wrong_amount: Annotated[
        bool,
        typer.Option("--wrong-amount", help="Pay another amount than is due (never applied)."),
    ] = False,
    repeat: Annotated[
        int, typer.Option(min=1, help="Send each notification this many times at once.")
    ] = 1,
    fail_payment: Annotated[
        bool, typer.Option("--fail", help="Send a failed payment instead.")
    ] = False,
    wait: Annotated[
        float,
        typer.Option(min=0, help="Seconds to wait for payment-service to open the payment."),
    ] = 10.0,
    as_json: Json = False,
) -> None:
    """Pay an order through payment-service's webhook, as its payment gateway would."""
    due, answers = run(
        pay(
            settings(),
            order,
            provider=provider,
            wrong_amount=wrong_amount,
            repeat=repeat,
            fail=fail_payment,
            wait=wait,
        )
    )
    if as_json:
        show_json({"payment": due, "answers": answers})
    else:
        out.print(f"{due.order_number}: {amount(due.amount, due.currency)} due ({due.status})")
        for answer in answers:
            out.print(f"{answer.status} {answer.notification}: {shorten(answer.body, 100)}")
    refused = [a for a in answers if not a.accepted]
    if refused:
        fail(f"payment-service refused {len(refused)} of {len(answers)} notification(s)")


# -- the demo -------------------------------------------------------------------------


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


@app.command("demo")
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


# -- dead letters ---------------------------------------------------------------------


def _query(
    service: str | None,
    group: str | None,
    message_type: str | None,
    error: str | None,
    contains: str | None,
) -> dlq.DeadLetterQuery:
    return dlq.DeadLetterQuery(
        service=service,
        group=group,
        message_type=message_type,
        error_type=error,
        contains=contains,
    )


def _letters_table(letters: list[dlq.DeadLetterEntry]) -> Table:
    table = Table(title=f"{len(letters)} dead letter(s)")
    for column in ("id", "group", "type", "key", "error", "attempts", "last failure"):
        table.add_column(column, overflow="fold")
    for letter in letters:
        table.add_row(
            letter.id,
            letter.group,
            letter.message_type or "?",
            letter.key or "",
            shorten(f"{letter.error_type}: {letter.error_message}", 70),
            str(letter.attempts),
            moment(letter.last_failure_at),
        )
    return table


def _counts_table(title: str, counts: list[dlq.GroupCount]) -> Table:
    table = Table(title=title)
    table.add_column("service")
    table.add_column("group")
    table.add_column("dead letters", justify="right")
    for count in counts:
        table.add_row(count.service, count.group, str(count.count))
    return table


@dlq_app.command("list")
def dlq_list(  # noqa: PLR0917 - typer reads each option from a parameter
    service: ServiceOption = None,
    group: GroupOption = None,
    message_type: TypeOption = None,
    error: ErrorOption = None,
    contains: ContainsOption = None,
    as_json: Json = False,
) -> None:
    """List the dead letters of every consumer group (or those the filters choose)."""
    query = _query(service, group, message_type, error, contains)
    letters = run(dlq.list_dead_letters(settings(), query))
    if as_json:
        show_json(letters)
    else:
        out.print(_letters_table(letters))


@dlq_app.command("show")
def dlq_show(
    letter_id: Annotated[str, typer.Argument(metavar="ID", help="The dead letter's id.")],
    group: Annotated[
        str | None, typer.Option(help="Its consumer group (needed when two have the id).")
    ] = None,
    as_json: Json = False,
) -> None:
    """Show one dead letter: why it is there, its headers and its body."""
    letter = run(dlq.show_dead_letter(settings(), letter_id, group=group))
    if as_json:
        show_json(letter)
        return
    table = Table.grid(padding=(0, 2))
    table.add_column(style="bold")
    table.add_column(overflow="fold")
    for name, value in (
        ("id", letter.id),
        ("service", letter.service),
        ("group", letter.group),
        ("source", letter.source),
        ("type", letter.message_type or "?"),
        ("key", letter.key or ""),
        ("error", f"{letter.error_type}: {letter.error_message}"),
        ("attempts", str(letter.attempts)),
        ("first failure", moment(letter.first_failure_at)),
        ("last failure", moment(letter.last_failure_at)),
        ("truncated", "yes (cannot be redriven)" if letter.truncated else "no"),
    ):
        table.add_row(name, value)
    for name, value in sorted(letter.headers.items()):
        table.add_row(f"header {name}", value)
    out.print(table)
    out.print(Text(letter.body.decode("utf-8", errors="replace")))


@dlq_app.command("redrive")
def dlq_redrive(  # noqa: PLR0917 - typer reads each option from a parameter
    letter_id: Annotated[
        str | None,
        typer.Argument(metavar="[ID]", help="One dead letter; without it, all that match."),
    ] = None,
    service: ServiceOption = None,
    group: GroupOption = None,
    message_type: TypeOption = None,
    error: ErrorOption = None,
    contains: ContainsOption = None,
    per_second: Annotated[float, typer.Option(min=0.01, help="At most this many a second.")] = 10.0,
    as_json: Json = False,
) -> None:
    """Give dead letters back to the consumer that failed them (and to it alone)."""
    if letter_id is not None:
        if service or message_type or error or contains:
            fail("redrive one letter by its id (with --group), or many by filters, not both")
        letter = run(dlq.redrive_dead_letter(settings(), letter_id, group=group))
        if as_json:
            show_json([dlq.GroupCount(letter.service, letter.group, 1)])
        else:
            out.print(f"redrove {letter.id} to {letter.group}")
        return
    query = _query(service, group, message_type, error, contains)
    counts = run(dlq.redrive_dead_letters(settings(), query, per_second=per_second))
    if as_json:
        show_json(counts)
    else:
        out.print(_counts_table(f"redrove {dlq.count(counts)}", counts))


@dlq_app.command("purge")
def dlq_purge(  # noqa: PLR0917 - typer reads each option from a parameter
    service: ServiceOption = None,
    group: GroupOption = None,
    message_type: TypeOption = None,
    error: ErrorOption = None,
    contains: ContainsOption = None,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask first.")] = False,
    as_json: Json = False,
) -> None:
    """Remove the dead letters that match, for good (asks first unless --yes)."""
    query = _query(service, group, message_type, error, contains)
    shop = settings()
    if not yes:
        matching = run(dlq.list_dead_letters(shop, query))
        if not matching:
            out.print("no dead letter matches")
            return
        if not typer.confirm(f"Purge {len(matching)} dead letter(s) for good?", err=True):
            fail("nothing purged")
    counts = run(dlq.purge_dead_letters(shop, query))
    if as_json:
        show_json(counts)
    else:
        out.print(_counts_table(f"purged {dlq.count(counts)}", counts))


# -- the bus and the outboxes ---------------------------------------------------------


def counts_table(
    title: str, columns: list[str], rows: list[list[str]], *, labels: int = 1
) -> Table:
    """A table whose first ``labels`` columns name things and the rest count them (right
    aligned)."""
    table = Table(title=title)
    for index, column in enumerate(columns):
        table.add_column(column, justify="left" if index < labels else "right")
    for row in rows:
        table.add_row(*row)
    return table


@outbox_app.command("status")
def outbox_status_command(as_json: Json = False) -> None:
    """Each service's outbox: rows waiting to be published, the oldest one's age, rows
    scheduled for later, sent rows kept."""
    statuses = run(outbox_status(settings()))
    if as_json:
        show_json(statuses)
        return
    out.print(
        counts_table(
            "outbox",
            ["service", "unsent", "oldest unsent", "scheduled", "sent (kept)"],
            [
                [
                    status.service,
                    str(status.unsent),
                    seconds(status.oldest_unsent_age_seconds) if status.unsent else "-",
                    str(status.scheduled),
                    str(status.sent_kept),
                ]
                for status in statuses
            ],
        )
    )


@app.command("lag")
def lag_command(as_json: Json = False) -> None:
    """Messages waiting for each consumer group, per topic (Kafka) or queue (SQS)."""
    lags = run(consumer_lag(settings()))
    if as_json:
        show_json(lags)
        return
    out.print(
        counts_table(
            "consumer lag",
            ["group", "topic or queue", "waiting"],
            [[lag.group, lag.source, str(lag.waiting)] for lag in lags],
            labels=2,
        )
    )


@app.command("consumers")
def consumers_command(as_json: Json = False) -> None:
    """What each consumer group has done since its worker started (from /metrics)."""
    counts = run(consumer_counts(settings()))
    if as_json:
        show_json(counts)
        return
    out.print(
        counts_table(
            "consumers",
            ["group", "processed", "failed", "retried", "dead-lettered"],
            [
                [
                    count.group,
                    str(count.processed),
                    str(count.failed),
                    str(count.retried),
                    str(count.dead_lettered),
                ]
                for count in counts
            ],
        )
    )


# -- one order, and the e-mails -------------------------------------------------------


@app.command("timeline")
def timeline_command(
    order: Annotated[str, typer.Argument(metavar="ORDER", help="The order's id or number (SK-…).")],
    as_json: Json = False,
) -> None:
    """Everything the services know of one order, in time order."""
    entries = run(order_timeline(settings(), order))
    if as_json:
        show_json(entries)
        return
    if not entries:
        fail(f"no service knows of order {order}")
    table = Table(title=f"order {order}")
    for column in ("at", "service", "what", "detail"):
        table.add_column(column, overflow="fold")
    for entry in entries:
        table.add_row(moment(entry.at), entry.service, entry.what, entry.detail)
    out.print(table)


@app.command("mail")
def mail_command(
    newest: Annotated[int, typer.Option(min=1, help="Only the newest this many.")] = 20,
    as_json: Json = False,
) -> None:
    """The e-mails the development SMTP sink captured (`SHOP_OPS_MAIL_DIR`)."""
    mails = run(captured(settings(), newest=newest))
    if as_json:
        show_json(
            [
                {
                    "file_name": m.file_name,
                    "to": m.to,
                    "subject": m.subject,
                    "date": m.date,
                    "pdfs": [p.filename for p in m.pdfs],
                }
                for m in mails
            ]
        )
        return
    table = Table(title=f"{len(mails)} captured e-mail(s)")
    for column in ("file", "date", "to", "subject", "pdf"):
        table.add_column(column, overflow="fold")
    for mail in mails:
        table.add_row(
            mail.file_name,
            moment(mail.date),
            mail.to,
            mail.subject,
            ", ".join(p.filename for p in mail.pdfs),
        )
    out.print(table)


def main() -> None:
    app()
