"""Alembic environment: migrations run on the async engine of the given URL."""

from __future__ import annotations

import asyncio

from alembic import context
from sqlalchemy import Connection
from sqlalchemy.ext.asyncio import create_async_engine

from shop.order.adapters.tables import ALL_METADATA


def run_with(connection: Connection) -> None:
    context.configure(connection=connection, target_metadata=ALL_METADATA)
    with context.begin_transaction():
        context.run_migrations()


async def run_online() -> None:
    engine = create_async_engine(context.config.get_main_option("sqlalchemy.url") or "")
    try:
        async with engine.connect() as connection:
            await connection.run_sync(run_with)
            await connection.commit()
    finally:
        await engine.dispose()


if context.is_offline_mode():
    context.configure(
        url=context.config.get_main_option("sqlalchemy.url"),
        target_metadata=ALL_METADATA,
        literal_binds=True,
    )
    with context.begin_transaction():
        context.run_migrations()
else:
    asyncio.run(run_online())
