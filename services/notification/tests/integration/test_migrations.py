"""An upgrade finds an index an operator built by hand before the deploy."""

from __future__ import annotations

import asyncpg

from shop.database.migrations import schema_differences
from shop.messaging.relay import asyncpg_dsn
from shop.notification.adapters.tables import ALL_METADATA
from shop.notification.migrations import migrate_async


async def test_an_index_built_by_hand_before_the_deploy_is_found_by_the_upgrade(
    database_url: str,
) -> None:
    # On a large table an operator builds it CONCURRENTLY first (the revision's build would
    # hold off the marks' writes for as long as it takes); the revision then finds it.
    await migrate_async(database_url, "0003")
    connection = await asyncpg.connect(asyncpg_dsn(database_url))
    try:
        await connection.execute(
            "CREATE INDEX CONCURRENTLY ix_order_notifications_sent_at"
            " ON order_notifications (sent_at)"
        )
    finally:
        await connection.close()

    await migrate_async(database_url)

    assert await schema_differences(database_url, ALL_METADATA) == []
