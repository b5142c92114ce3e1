"""Every pod of a service migrates its database as it starts (an init step), so several
may migrate at once: each takes the migration lock, and waits while another holds it."""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys

import asyncpg

from shop.database.alembic_env import MIGRATION_LOCK


async def test_a_migration_waits_for_the_one_holding_the_lock(database_url: str) -> None:
    holder = await asyncpg.connect(database_url)
    try:
        await holder.execute("SELECT pg_advisory_lock($1)", MIGRATION_LOCK)
        migrating = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "shop.order",
            "migrate",
            env={
                **os.environ,
                "SHOP_ORDER_DATABASE_URL": database_url,
                "SHOP_ORDER_ENVIRONMENT": "test",
            },
            stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.PIPE,
        )
        # Long enough to import, connect and migrate many times over.
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(migrating.wait(), timeout=15)
        assert migrating.returncode is None, "the migration ran while another held the lock"
        tables = await holder.fetchval("SELECT count(*) FROM pg_tables WHERE schemaname = 'public'")
        assert tables == 0
        await holder.execute("SELECT pg_advisory_unlock($1)", MIGRATION_LOCK)
        _, stderr = await asyncio.wait_for(migrating.communicate(), timeout=120)
        assert migrating.returncode == 0, stderr.decode()[-2000:]
        assert await holder.fetchval("SELECT count(*) FROM alembic_version") == 1
    finally:
        await holder.close()
