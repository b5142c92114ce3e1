"""``shopctl forget-customer``: one customer erased or anonymised in every service's store,
on their request (:mod:`shop.ops.forget`)."""

from __future__ import annotations

from typing import Annotated

import typer

from shop.console.shopctl.bus import counts_table
from shop.console.shopctl.terminal import Json, out, run, settings, show_json
from shop.messaging.privacy import mask_email
from shop.ops.forget import forget_customer


def forget_customer_command(
    email: Annotated[str, typer.Argument(metavar="EMAIL", help="The customer's e-mail address.")],
    yes: Annotated[
        bool, typer.Option("--yes", help="Do not ask first (it cannot be undone).")
    ] = False,
    as_json: Json = False,
) -> None:
    """Forget a customer: their address and id no longer appear in order-service's orders
    and outbox, payment-service's gateway notifications or notification-service's records
    of e-mails sent (orders keep their lines, totals and states). Asks each service's
    internal API with the operator token; running it again changes nothing. Dead letters
    are not touched."""
    if not yes:
        question = f"Forget {mask_email(email)} in every service? It cannot be undone"
        typer.confirm(question, abort=True)
    forgotten = run(forget_customer(settings(), email))
    if as_json:
        show_json(forgotten)
        return
    out.print(
        counts_table(
            f"{mask_email(email)} forgotten ({forgotten.orders} order(s))",
            ["service", "what", "rows changed"],
            [
                [service, what, str(rows)]
                for service, changes in forgotten.changed.items()
                for what, rows in changes.items()
            ],
            labels=2,
        )
    )
