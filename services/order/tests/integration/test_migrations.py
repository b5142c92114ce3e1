"""Every pod of a service migrates its database as it starts (an init step), so several
may migrate at once: each takes the migration lock, and waits while another holds it."""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys

import asyncpg
import pytest
from sqlalchemy import text

from shop.database import create_engine
from shop.database.alembic_env import MIGRATION_LOCK
from shop.database.migrations import schema_differences
from shop.messaging.relay import asyncpg_dsn
from shop.messaging.schema import create_tables
from shop.order.adapters.tables import ALL_METADATA
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
    assert "messaging_0003_dead_letters" in heads


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


OLD_OUTBOX = """
    CREATE TABLE outbox (
        id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        event_id UUID NOT NULL UNIQUE,
        key VARCHAR(200) NOT NULL,
        message_type VARCHAR(100) NOT NULL,
        headers JSONB NOT NULL,
        body BYTEA NOT NULL,
        created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
        published_at TIMESTAMPTZ
    );
    CREATE INDEX ix_outbox_published_at ON outbox (published_at) WHERE published_at IS NOT NULL;
    CREATE INDEX ix_outbox_unsent ON outbox (id) WHERE published_at IS NULL;
    CREATE TABLE inbox (
        consumer VARCHAR(200) NOT NULL,
        event_id UUID NOT NULL,
        message_type VARCHAR(100) NOT NULL,
        processed_at TIMESTAMPTZ NOT NULL DEFAULT now(),
        CONSTRAINT pk_inbox PRIMARY KEY (consumer, event_id)
    );
"""
"""The outbox and inbox as order-service's own first revision made them, before scheduled
rows (its second revision added ``due_at`` and split the unsent index)."""


@pytest.mark.parametrize("stamped", ["0001", "0002"])
async def test_a_database_the_older_revisions_migrated_is_brought_up_to_date(
    database_url: str, stamped: str
) -> None:
    # The service's tables as its first revision made them, the outbox and inbox as it
    # made them then, and the revision it was stamped at (the second one changed the outbox
    # alone: now the library's branch does).
    await migrate_async(database_url, "0001")
    connection = await asyncpg.connect(asyncpg_dsn(database_url))
    try:
        await connection.execute(OLD_OUTBOX)
        await connection.execute("UPDATE alembic_version SET version_num = $1", stamped)
    finally:
        await connection.close()

    await migrate_async(database_url)

    assert await schema_differences(database_url, ALL_METADATA) == []


async def test_an_index_built_by_hand_before_the_deploy_is_found_by_the_upgrade(
    database_url: str,
) -> None:
    # On a large table an operator builds it CONCURRENTLY first (the revision's build would
    # hold off the checkouts' writes for as long as it takes); the revision then finds it.
    await migrate_async(database_url, "0003")
    connection = await asyncpg.connect(asyncpg_dsn(database_url))
    try:
        await connection.execute(
            "CREATE INDEX CONCURRENTLY ix_idempotency_keys_created_at"
            " ON idempotency_keys (created_at)"
        )
    finally:
        await connection.close()

    await migrate_async(database_url)

    assert await schema_differences(database_url, ALL_METADATA) == []
