"""The customer's side, as a frontend and a payment gateway would act: a token, an order, its
payment; and everything the services know of one order."""

from __future__ import annotations

import sys
from datetime import timedelta
from typing import Annotated

import typer
from rich.table import Table

from shop.console.shopctl.terminal import Json, fail, out, run, settings, show_json
from shop.ops.frontend import CartLine, checkout
from shop.ops.payments import Provider, pay
from shop.ops.render import amount, moment, shorten
from shop.ops.timeline import order_timeline
from shop.ops.tokens import DEVELOPMENT_SIGNING_KEY, customer_token


def token_command(
    customer: Annotated[str, typer.Option(help="The customer's id (the token's sub).")] = (
        "cust_ayu"
    ),
    email: Annotated[str, typer.Option(help="The customer's e-mail address.")] = (
        "ayu@example.com"
    ),
    hours: Annotated[float, typer.Option(min=0.01, help="How long the token is valid.")] = 12.0,
    real_key: Annotated[
        bool,
        typer.Option(
            "--real-key",
            help="Sign with a key that is not the development one (it acts as the customer).",
        ),
    ] = False,
) -> None:
    """Print a customer token for order-service's API (development: signed with
    `SHOP_OPS_JWT_SECRET`, as the identity provider would)."""
    ops = settings()
    if not real_key and ops.jwt_secret.get_secret_value() != DEVELOPMENT_SIGNING_KEY:
        fail(
            "SHOP_OPS_JWT_SECRET is not the development key: a token signed with it lets "
            "whoever holds it order as that customer (pass --real-key if that is meant)"
        )
    token = customer_token(ops, customer, email, valid_for=timedelta(hours=hours))
    sys.stdout.write(token + "\n")


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
    out_of_order: Annotated[
        bool,
        typer.Option(
            "--out-of-order",
            help="Send the notifications out of order: Midtrans' outcome before its pending "
            "notice, or a success before the failure of an earlier attempt.",
        ),
    ] = False,
    wait: Annotated[
        float,
        typer.Option(min=0, help="Seconds to wait for payment-service to open the payment."),
    ] = 10.0,
    as_json: Json = False,
) -> None:
    """Pay an order at the development payment gateway (SHOP_OPS_GATEWAY_URL), which records
    the charge and notifies payment-service's webhook."""
    due, answers = run(
        pay(
            settings(),
            order,
            provider=provider,
            wrong_amount=wrong_amount,
            repeat=repeat,
            fail=fail_payment,
            out_of_order=out_of_order,
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
