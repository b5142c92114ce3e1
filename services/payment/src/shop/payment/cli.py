"""``python -m shop.payment migrate``: bring the database schema up to date."""

from __future__ import annotations

import typer

from shop.payment.migrations import migrate
from shop.payment.settings import PaymentSettings

app = typer.Typer(help="payment-service administration.", no_args_is_help=True)


@app.command("migrate")
def migrate_command() -> None:
    """Bring the database schema up to date."""
    migrate(PaymentSettings(process="migrate").database_url)
    typer.echo("database migrated")


@app.callback()
def main() -> None:
    """Keeps ``migrate`` a sub-command (typer runs a lone command without its name)."""
