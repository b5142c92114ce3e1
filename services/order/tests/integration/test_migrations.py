"""Every pod of a service migrates its database as it starts (an init step), so several
may migrate at once: each takes the migration lock, and waits while another holds it."""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys

import asyncpg
from sqlalchemy import text

from shop.database import create_engine
from shop.database.alembic_env import MIGRATION_LOCK
from shop.messaging.relay import asyncpg_dsn
from shop.messaging.schema import create_tables
from shop.order.migrations import migrate_async


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
        # One row per branch: the service's and shop.messaging's.
        assert await holder.fetchval("SELECT count(*) FROM alembic_version") == 2
    finally:
        await holder.close()


async def tables_of(database_url: str) -> set[str]:
    connection = await asyncpg.connect(asyncpg_dsn(database_url))
    try:
        rows = await connection.fetch("SELECT tablename FROM pg_tables WHERE schemaname = 'public'")
        return {row["tablename"] for row in rows}
    finally:
        await connection.close()


async def test_the_outbox_and_inbox_come_from_the_messaging_branch_alone(
    database_url: str,
) -> None:
    # The service's own first revision leaves them to shop.messaging's branch: one
    # definition, changed in one place.
    await migrate_async(database_url, "0001")
    assert {"outbox", "inbox"}.isdisjoint(await tables_of(database_url))
    await migrate_async(database_url)
    assert {"outbox", "inbox"} <= await tables_of(database_url)
    connection = await asyncpg.connect(asyncpg_dsn(database_url))
    try:
        heads = {row["version_num"] for row in await connection.fetch("TABLE alembic_version")}
    finally:
        await connection.close()
    assert "messaging_0001" in heads


async def test_a_database_whose_outbox_a_service_migration_made_keeps_it_and_its_rows(
    database_url: str,
) -> None:
    # As the databases migrated before the branch existed: the tables are there (the same
    # definition), with a row waiting to be sent; the branch adopts them as they are.
    engine = create_engine(database_url)
    try:
        async with engine.begin() as connection:
            await create_tables(connection)
            await connection.execute(
                text(
                    "INSERT INTO outbox (event_id, key, message_type, headers, body)"
                    " VALUES (gen_random_uuid(), 'order-1', 'order.created', '{}', 'x')"
                )
            )
    finally:
        await engine.dispose()
    await migrate_async(database_url)
    connection = await asyncpg.connect(asyncpg_dsn(database_url))
    try:
        assert await connection.fetchval("SELECT count(*) FROM outbox") == 1
    finally:
        await connection.close()
