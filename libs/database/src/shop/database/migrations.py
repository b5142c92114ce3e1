"""A service's Alembic migrations, run from code (a CLI, a test fixture, a benchmark)
without an ``alembic.ini``: the folder and the database URL are all it takes."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import Path

from alembic import command
from alembic.config import Config

from shop.database.engine import sqlalchemy_url


@dataclass(frozen=True, slots=True)
class Migrations:
    folder: Path
    """Holds ``env.py`` (see :mod:`shop.database.alembic_env`) and ``versions/``."""

    def config(self, url: str) -> Config:
        config = Config()
        config.set_main_option("script_location", str(self.folder))
        config.set_main_option("sqlalchemy.url", sqlalchemy_url(url).replace("%", "%%"))
        return config

    def upgrade(self, url: str, revision: str = "head") -> None:
        """Bring the database at ``url`` to ``revision`` (from synchronous code)."""
        command.upgrade(self.config(url), revision)

    async def upgrade_async(self, url: str, revision: str = "head") -> None:
        """:meth:`upgrade` from async code (the env runs its own event loop)."""
        await asyncio.to_thread(self.upgrade, url, revision)
