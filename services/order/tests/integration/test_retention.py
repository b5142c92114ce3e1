"""order-service's worker deletes the idempotency keys and the inbox rows past their
retention, a batch at a time along their indexes, and keeps every younger one."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import asyncpg
import pytest

from shop.messaging.relay import asyncpg_dsn
from shop.messaging.testing import eventually, running
from shop.order.adapters.retention import retained_tables
from shop.order.bootstrap import build_worker
from shop.order.settings import OrderRetentionSettings, OrderSettings

RETENTION = OrderRetentionSettings(
    inbox=timedelta(days=14),
    idempotency_keys=timedelta(days=7),
    interval=0.05,
    batch_size=1000,
    batch_pause=0,
)
A_WHOLE_ROUND = (datetime.min.replace(tzinfo=UTC), datetime.now(UTC), 1000)
"""A batch's parameters: from the beginning, up to now, a thousand rows."""
_SEED_KEYS = """
    INSERT INTO idempotency_keys (customer_id, key, request_hash, created_at)
    SELECT 'customer-' || i % 50, $3 || i, 'hash', now() - make_interval(days => $2)
    FROM generate_series(1, $1) AS i
"""
_SEED_INBOX = """
    INSERT INTO inbox (consumer, event_id, message_type, processed_at)
    SELECT 'order-service', gen_random_uuid(), 'payment.received',
           now() - make_interval(days => $2)
    FROM generate_series(1, $1) AS i
"""


async def test_the_worker_deletes_keys_and_inbox_rows_past_their_retention_and_no_younger(
    order_settings: OrderSettings,
) -> None:
    settings = order_settings.model_copy(update={"retention": RETENTION})
    connection = await asyncpg.connect(asyncpg_dsn(settings.database_url))
    try:
        await connection.execute(_SEED_KEYS, 2500, 8, "old-")
        await connection.execute(_SEED_KEYS, 300, 6, "young-")
        await connection.execute(_SEED_INBOX, 1200, 15)
        await connection.execute(_SEED_INBOX, 100, 13)
        async with running(build_worker(settings, health_port=0)) as worker:

            def deleted(table: str) -> float:
                name = "messaging_retention_deleted_total"
                return worker.metrics.registry.get_sample_value(name, {"table": table}) or 0.0

            async def cleaned() -> bool:
                return (deleted("idempotency_keys"), deleted("inbox")) == (2500, 1200)

            await eventually(cleaned, what="the worker's retention round")
        kept = await connection.fetch("SELECT key FROM idempotency_keys")
        inbox = await connection.fetchval(
            "SELECT count(*) FROM inbox WHERE processed_at > now() - interval '14 days'"
        )
        assert await connection.fetchval("SELECT count(*) FROM inbox") == inbox == 100
    finally:
        await connection.close()
    assert len(kept) == 300
    assert all(row["key"].startswith("young-") for row in kept)


@pytest.mark.parametrize(
    ("table", "index"),
    [("idempotency_keys", "ix_idempotency_keys_created_at"), ("inbox", "ix_inbox_processed_at")],
)
async def test_each_batch_reads_its_table_along_the_index_the_migrations_made(
    order_settings: OrderSettings, table: str, index: str
) -> None:
    (batch,) = [t.batch for t in retained_tables(RETENTION) if t.name == table]
    connection = await asyncpg.connect(asyncpg_dsn(order_settings.database_url))
    try:
        await connection.execute("SET enable_seqscan = off")
        plan = await connection.fetch("EXPLAIN " + batch, *A_WHOLE_ROUND)
    finally:
        await connection.close()
    assert index in "\n".join(row[0] for row in plan)
