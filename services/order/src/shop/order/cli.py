"""``python -m shop.order``: migrate the database, seed the catalogue, issue a dev token."""

from __future__ import annotations

import asyncio
from datetime import timedelta

import typer

from shop.database import create_engine, session_factory
from shop.order.adapters.catalogue import seed_catalogue
from shop.order.api.auth import issue_token
from shop.order.migrations import migrate
from shop.order.settings import OrderSettings

app = typer.Typer(help="order-service administration.", no_args_is_help=True)


@app.command("migrate")
def migrate_command() -> None:
    """Bring the database schema up to date."""
    migrate(OrderSettings().database_url)
    typer.echo("database migrated")


@app.command("seed")
def seed_command() -> None:
    """Add the development catalogue (a dozen products) where missing."""

    async def seed() -> int:
        engine = create_engine(OrderSettings().database_url, pool_size=1)
        try:
            async with session_factory(engine)() as session, session.begin():
                return await seed_catalogue(session)
        finally:
            await engine.dispose()

    typer.echo(f"{asyncio.run(seed())} product(s) added")


@app.command("token")
def token_command(
    customer_id: str = typer.Option("cust_ayu", help="The token's sub claim."),
    email: str = typer.Option("ayu@example.com", help="The token's email claim."),
    hours: float = typer.Option(12.0, help="How long the token is valid."),
) -> None:
    """Print a customer token signed with the configured secret (development)."""
    settings = OrderSettings()
    if settings.environment == "production":
        raise typer.BadParameter("tokens come from the identity provider in production")
    typer.echo(issue_token(settings, customer_id, email, valid_for=timedelta(hours=hours)))
