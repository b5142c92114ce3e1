"""order-service's database: its migrations, and the checkout's way to the driver."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import asyncpg
from sqlalchemy.ext.asyncio import AsyncEngine
from sqlalchemy.util import greenlet_spawn

from shop.database import Migrations

MIGRATIONS = Migrations(Path(__file__).with_name("migrations"))
migrate = MIGRATIONS.upgrade
migrate_async = MIGRATIONS.upgrade_async


@asynccontextmanager
async def driver_connection(engine: AsyncEngine) -> AsyncIterator[asyncpg.Connection]:
    """The asyncpg connection underneath one of ``engine``'s pooled connections, for a hot
    path in plain SQL; it goes back to the same pool (one pool, one connection budget).

    Taken from the pool itself, not through a SQLAlchemy ``Connection``: the checkout
    measured 8% less CPU that way (make bench-checkout)."""
    pooled = await engine.raw_connection()
    try:
        yield pooled.driver_connection
    finally:
        # Giving it back may close it (an invalidated connection), which awaits inside
        # SQLAlchemy: run it where SQLAlchemy can.
        await greenlet_spawn(pooled.close)
