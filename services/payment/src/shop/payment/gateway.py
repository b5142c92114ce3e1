"""``python -m shop.payment.gateway``: a payment gateway for development and tests. It signs
and sends notifications to payment-service's webhooks exactly as each provider would: the
shop's own format (``Payment-Signature``) or Midtrans' (``signature_key``), with the secrets
of this machine's ``SHOP_PAYMENT_*`` settings.

An order is named by its id or its number; the amount defaults to the order's total, read
from payment-service's database (``SHOP_PAYMENT_DATABASE_URL``), as a gateway would know it
from the payment it was asked to take.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
import uuid
from dataclasses import dataclass
from enum import StrEnum
from typing import Annotated, Any

import httpx
import typer
from sqlalchemy import or_, select

from shop.database import create_engine
from shop.payment.adapters.tables import payments
from shop.payment.domain import midtrans, shop_format
from shop.payment.settings import PaymentSettings

app = typer.Typer(help="A payment gateway that notifies payment-service.", no_args_is_help=True)


class Format(StrEnum):
    SHOP = "shop"
    MIDTRANS = "midtrans"


@dataclass(frozen=True, slots=True)
class Order:
    id: uuid.UUID
    amount: int
    currency: str


@dataclass(frozen=True, slots=True)
class Notice:
    """One notification as the gateway would send it: where, and what."""

    path: str
    body: bytes
    headers: dict[str, str]
    label: str


def find_order(settings: PaymentSettings, reference: str) -> Order:
    """The order's id and total by its id or number, from payment-service's database."""

    async def look_up() -> Order:
        engine = create_engine(settings.database_url, pool_size=1)
        try:
            async with engine.connect() as connection:
                condition = payments.c.order_number == reference
                with contextlib.suppress(ValueError):  # not an id: a number, then
                    condition = or_(condition, payments.c.order_id == uuid.UUID(reference))
                row = (
                    await connection.execute(
                        select(payments.c.order_id, payments.c.amount, payments.c.currency).where(
                            condition
                        )
                    )
                ).first()
        finally:
            await engine.dispose()
        if row is None:
            raise typer.BadParameter(
                f"no payment opened for order {reference!r} (has its OrderCreated arrived?)"
            )
        return Order(row.order_id, row.amount, row.currency)

    return asyncio.run(look_up())


def shop_notice(
    settings: PaymentSettings, order: Order, *, kind: str, amount: int, event_id: str, at: int
) -> Notice:
    body = json.dumps(
        {
            "event_id": event_id,
            "type": kind,
            "created": at,
            "data": {
                "order_id": str(order.id),
                "amount": amount,
                "currency": order.currency,
                "provider_payment_id": f"pay_{order.id.hex[:12]}",
            },
        }
    ).encode()
    secret = settings.webhook_secrets[0].get_secret_value()
    return Notice(
        "/v1/payments/webhook",
        body,
        {
            shop_format.SIGNATURE_HEADER: shop_format.sign(body, secret, at),
            "Content-Type": "application/json",
        },
        f"{kind} {event_id}",
    )


def midtrans_notice(
    settings: PaymentSettings, order: Order, *, status: str, amount: int, transaction_id: str
) -> Notice:
    status_code = {"settlement": "200", "capture": "200", "pending": "201"}.get(status, "202")
    gross_amount = f"{amount}.00"
    payload: dict[str, Any] = {
        "transaction_time": time.strftime("%Y-%m-%d %H:%M:%S"),
        "transaction_status": status,
        "transaction_id": transaction_id,
        "status_code": status_code,
        "signature_key": midtrans.signature_key(
            str(order.id),
            status_code,
            gross_amount,
            settings.midtrans_server_key.get_secret_value(),
        ),
        "payment_type": "bank_transfer",
        "order_id": str(order.id),
        "gross_amount": gross_amount,
        "currency": order.currency,
        "fraud_status": "accept",
    }
    return Notice(
        "/v1/payments/webhooks/midtrans",
        json.dumps(payload).encode(),
        {"Content-Type": "application/json"},
        f"{status} {transaction_id}",
    )


def notices(
    settings: PaymentSettings,
    order: Order,
    *,
    fmt: Format,
    amount: int,
    fail: bool,
    times: int,
    out_of_order: bool,
) -> list[Notice]:
    """What the gateway sends for one payment: a pending notice then the outcome (Midtrans),
    or the outcome alone (the shop's format), each ``times`` over; reversed when asked."""
    stamp = uuid.uuid4().hex[:10]
    if fmt == Format.SHOP:
        kind = "payment.failed" if fail else "payment.paid"
        sequence = [
            shop_notice(
                settings,
                order,
                kind=kind,
                amount=amount,
                event_id=f"evt_{stamp}",
                at=int(time.time()),
            )
        ]
        if out_of_order:
            # A failure of an earlier attempt arriving after the success.
            sequence.insert(
                0,
                shop_notice(
                    settings,
                    order,
                    kind="payment.failed",
                    amount=amount,
                    event_id=f"evt_{stamp}_earlier",
                    at=int(time.time()) - 60,
                ),
            )
    else:
        transaction = str(uuid.uuid4())
        outcome = "deny" if fail else "settlement"
        sequence = [
            midtrans_notice(settings, order, status=s, amount=amount, transaction_id=transaction)
            for s in ("pending", outcome)
        ]
    if out_of_order:
        sequence.reverse()
    return [notice for notice in sequence for _ in range(times)]


async def send(
    url: str, sequence: list[Notice], *, concurrently: bool
) -> list[tuple[str, int, str]]:
    async with httpx.AsyncClient(base_url=url, timeout=10) as client:

        async def one(notice: Notice) -> tuple[str, int, str]:
            reply = await client.post(notice.path, content=notice.body, headers=notice.headers)
            return notice.label, reply.status_code, reply.text

        if concurrently:
            return list(await asyncio.gather(*(one(n) for n in sequence)))
        return [await one(n) for n in sequence]


@app.command()
def pay(  # noqa: PLR0917 - typer reads each option from a parameter
    order: Annotated[str, typer.Argument(help="The order's id or number (SK-…).")],
    fmt: Annotated[Format, typer.Option("--format", help="Which gateway's format.")] = Format.SHOP,
    amount: Annotated[
        int | None, typer.Option(help="Pay this instead of the order's total (a wrong amount).")
    ] = None,
    fail: Annotated[bool, typer.Option("--fail", help="Send a failed payment instead.")] = False,
    times: Annotated[int, typer.Option(min=1, help="Send each notification this often.")] = 1,
    out_of_order: Annotated[
        bool, typer.Option("--out-of-order", help="Send the notifications in reverse order.")
    ] = False,
    url: Annotated[
        str | None, typer.Option(help="payment-service's API (default: settings).")
    ] = None,
) -> None:
    """Pay an order (or fail to) through payment-service's webhook."""
    settings = PaymentSettings()
    found = find_order(settings, order)
    sequence = notices(
        settings,
        found,
        fmt=fmt,
        amount=found.amount if amount is None else amount,
        fail=fail,
        times=times,
        out_of_order=out_of_order,
    )
    base = url or f"http://{settings.host}:{settings.port}"
    answers = asyncio.run(send(base, sequence, concurrently=times > 1))
    for label, status, text in answers:
        typer.echo(f"{status} {label}: {text}")
    if any(status != 200 for _, status, _ in answers):
        raise typer.Exit(code=1)


@app.callback()
def main() -> None:
    """Keeps ``pay`` a sub-command (typer runs a lone command without its name)."""


if __name__ == "__main__":
    app()
