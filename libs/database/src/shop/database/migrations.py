"""A service's Alembic migrations, run from code (a CLI, a test fixture, a benchmark)
without an ``alembic.ini``: the folder and the database URL are all it takes."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.config import Config
from alembic.migration import MigrationContext
from sqlalchemy import Connection, MetaData

from shop.database.engine import create_engine, sqlalchemy_url


@dataclass(frozen=True, slots=True)
class Migrations:
    folder: Path
    """Holds ``env.py`` (see :mod:`shop.database.alembic_env`) and ``versions/``."""
    libraries: Sequence[Path] = ()
    """The version folders of libraries whose tables the service keeps (the outbox's and
    inbox's: ``shop.messaging.migrations.VERSIONS``), each a branch of its own that runs
    beside the service's; their tables are created and changed by the library alone."""

    def config(self, url: str) -> Config:
        config = Config()
        config.set_main_option("script_location", str(self.folder))
        config.set_main_option("path_separator", "os")
        locations = [self.folder / "versions", *self.libraries]
        config.set_main_option(
            "version_locations", os.pathsep.join(str(p) for p in locations).replace("%", "%%")
        )
        config.set_main_option("sqlalchemy.url", sqlalchemy_url(url).replace("%", "%%"))
        return config

    def upgrade(self, url: str, revision: str = "heads") -> None:
        """Bring the database at ``url`` to ``revision`` (from synchronous code); by
        default to the head of every branch, the service's and its libraries'."""
        command.upgrade(self.config(url), revision)

    async def upgrade_async(self, url: str, revision: str = "heads") -> None:
        """:meth:`upgrade` from async code (the env runs its own event loop)."""
        await asyncio.to_thread(self.upgrade, url, revision)


async def schema_differences(url: str, metadatas: Sequence[MetaData]) -> list[Any]:
    """What the database at ``url`` differs in from the tables of ``metadatas`` (columns,
    types, indexes, constraints Alembic compares; not CHECK constraints): empty when its
    migrations build exactly what the code describes."""
    merged = MetaData()
    for metadata in metadatas:
        for table in metadata.tables.values():
            table.to_metadata(merged)

    def differences(connection: Connection) -> list[Any]:
        context = MigrationContext.configure(connection, opts={"compare_type": True})
        return list(compare_metadata(context, merged))

    engine = create_engine(url)
    try:
        async with engine.connect() as connection:
            return await connection.run_sync(differences)
    finally:
        await engine.dispose()
