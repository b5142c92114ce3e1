"""``python -m shop.notification migrate``: bring the database schema up to date."""

from __future__ import annotations

import typer

from shop.notification.migrations import migrate
from shop.notification.settings import NotificationSettings

app = typer.Typer(help="notification-service administration.", no_args_is_help=True)


@app.command("migrate")
def migrate_command() -> None:
    """Bring the database schema up to date."""
    migrate(NotificationSettings(process="migrate").database_url)
    typer.echo("database migrated")


@app.callback()
def main() -> None:
    """Keeps ``migrate`` a sub-command (typer runs a lone command without its name)."""
