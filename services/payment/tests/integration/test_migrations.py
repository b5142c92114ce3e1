"""The migrations build exactly the schema the code's tables describe: a column, constraint
or index added to one and forgotten in the other fails here, before it fails in a pod."""

from __future__ import annotations

import uuid

import asyncpg

from shop.database.migrations import schema_differences
from shop.messaging.relay import asyncpg_dsn
from shop.payment.adapters.tables import ALL_METADATA
from shop.payment.domain.notifications import Meaning
from shop.payment.domain.status import PaymentStatus
from shop.payment.migrations import migrate_async


async def test_the_migrated_database_matches_the_tables_in_code(database_url: str) -> None:
    await migrate_async(database_url)
    assert await schema_differences(database_url, ALL_METADATA) == []


async def test_every_state_of_the_state_machine_is_one_the_database_takes(
    database_url: str,
) -> None:
    # Alembic does not compare CHECK constraints: each state is written instead.
    await migrate_async(database_url)
    connection = await asyncpg.connect(asyncpg_dsn(database_url))
    try:
        for status in PaymentStatus:
            await connection.execute(
                "INSERT INTO payments (id, order_id, order_number, amount, currency, status, "
                "paid_at) VALUES ($1, $2, $3, 1, 'IDR', $4, now())",
                uuid.uuid4(),
                uuid.uuid4(),
                f"SK-{status[:4].upper()}-{uuid.uuid4().hex[:4].upper()}",
                status.value,
            )
        for meaning in Meaning:
            await connection.execute(
                "INSERT INTO payment_events (provider, provider_event_id, type, raw_body, "
                "meaning, order_id, amount, currency, provider_payment_id) "
                "VALUES ('shop', $1, 't', '', $2, $3, 1, 'IDR', 'p')",
                f"evt_{meaning}",
                meaning.value,
                uuid.uuid4(),
            )
    finally:
        await connection.close()


async def test_an_index_built_by_hand_before_the_deploy_is_found_by_the_upgrade(
    database_url: str,
) -> None:
    # On a large table an operator builds it CONCURRENTLY first (the revision's build would
    # hold off the notifications' writes for as long as it takes); the revision then finds it.
    await migrate_async(database_url, "0002")
    connection = await asyncpg.connect(asyncpg_dsn(database_url))
    try:
        await connection.execute(
            "CREATE INDEX CONCURRENTLY ix_payment_events_raw_body_kept"
            " ON payment_events (processed_at) WHERE raw_body IS NOT NULL"
        )
    finally:
        await connection.close()

    await migrate_async(database_url)

    assert await schema_differences(database_url, ALL_METADATA) == []
