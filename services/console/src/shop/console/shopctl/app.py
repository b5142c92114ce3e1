"""`shopctl`: operate the running shop from a terminal, through its public interfaces only
(its HTTP APIs, the bus, each service's own database, its workers' health ports).

Where it finds the shop: the `SHOP_OPS_*` variables and the env file `make run` writes
(`.devstack/shop.env`; `SHOP_OPS_ENV_FILE` names another). A failure prints one line to
stderr and exits 1.
"""

from __future__ import annotations

import logging
import sys
from typing import Annotated

import structlog
import typer

from shop.console.shopctl import bus, customers, deadletters, demo, mail, orders, reconciliation
from shop.console.shopctl.terminal import options

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


@app.callback()
def main_options(
    traceback: Annotated[
        bool, typer.Option("--traceback", help="Show where an unexpected failure came from.")
    ] = False,
) -> None:
    options.traceback = traceback
    # What the libraries underneath log is for the services' logs, not an operator's
    # terminal: only their errors show, on stderr.
    logging.getLogger("aiokafka").setLevel(logging.CRITICAL)
    structlog.configure(
        wrapper_class=structlog.make_filtering_bound_logger(logging.ERROR),
        # Looked up at each logger's making, not now: stderr may be replaced meanwhile.
        logger_factory=lambda *_: structlog.PrintLogger(file=sys.stderr),
    )


# Every command, wired in one place: what `shopctl --help` lists is this list.
app.command("token")(orders.token_command)
app.command("order")(orders.order_command)
app.command("pay")(orders.pay_command)
app.command("demo")(demo.demo_command)
dlq_app.command("list")(deadletters.dlq_list)
dlq_app.command("show")(deadletters.dlq_show)
dlq_app.command("redrive")(deadletters.dlq_redrive)
dlq_app.command("purge")(deadletters.dlq_purge)
outbox_app.command("status")(bus.outbox_status_command)
app.command("lag")(bus.lag_command)
app.command("consumers")(bus.consumers_command)
app.command("timeline")(orders.timeline_command)
app.command("mail")(mail.mail_command)
app.command("reconcile")(reconciliation.reconcile_command)
app.command("refunded-by-hand")(reconciliation.refunded_by_hand_command)
app.command("forget-customer")(customers.forget_customer_command)


def main() -> None:
    """The ``shopctl`` script."""
    app()
