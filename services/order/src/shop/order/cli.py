"""``python -m shop.order``: migrate the database, seed the catalogue."""

from __future__ import annotations

import asyncio

import typer

from shop.database import create_engine, session_factory
from shop.order.adapters.catalogue import seed_catalogue
from shop.order.migrations import migrate
from shop.order.settings import OrderSettings

app = typer.Typer(help="order-service administration.", no_args_is_help=True)


@app.command("migrate")
def migrate_command() -> None:
    """Bring the database schema up to date."""
    migrate(OrderSettings(process="migrate").database_url)
    typer.echo("database migrated")


@app.command("seed")
def seed_command() -> None:
    """Add the development catalogue (a dozen products) where missing."""

    async def seed() -> int:
        settings = OrderSettings(process="seed")
        engine = create_engine(
            settings.database_url, pool_size=1, timeouts=settings.database_timeouts
        )
        try:
            async with session_factory(engine)() as session, session.begin():
                return await seed_catalogue(session)
        finally:
            await engine.dispose()

    typer.echo(f"{asyncio.run(seed())} product(s) added")
