"""The body of every service's Alembic ``env.py``: migrations run on an async engine of the
configured URL, or print as SQL in offline mode. A service's env.py is two lines::

    from shop.database.alembic_env import run_migrations
    run_migrations(target_metadata)
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Final

from alembic import context
from sqlalchemy import Connection, MetaData, text
from sqlalchemy.ext.asyncio import create_async_engine

MIGRATION_LOCK: Final = 0x5_4F50_4D49_4752
"""The advisory lock a migration holds for its transaction (each service's database has
its own, so one key serves them all)."""


def run_migrations(target_metadata: MetaData | Sequence[MetaData]) -> None:
    if context.is_offline_mode():
        context.configure(
            url=context.config.get_main_option("sqlalchemy.url"),
            target_metadata=target_metadata,
            literal_binds=True,
        )
        with context.begin_transaction():
            context.run_migrations()
    else:
        asyncio.run(_run_online(target_metadata))


async def _run_online(target_metadata: MetaData | Sequence[MetaData]) -> None:
    def run_with(connection: Connection) -> None:
        context.configure(connection=connection, target_metadata=target_metadata)
        with context.begin_transaction():
            # Every process of a service may migrate as it starts (Kubernetes runs one init
            # step per pod): one at a time, and those after it find nothing left to do.
            connection.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": MIGRATION_LOCK})
            context.run_migrations()

    engine = create_async_engine(context.config.get_main_option("sqlalchemy.url") or "")
    try:
        async with engine.connect() as connection:
            await connection.run_sync(run_with)
            await connection.commit()
    finally:
        await engine.dispose()
