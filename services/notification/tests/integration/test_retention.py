"""notification-service's worker deletes the marks of e-mails sent longer ago than their
retention, a batch at a time along their index; younger ones stay."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import asyncpg

from shop.messaging import MessagingSettings
from shop.messaging.relay import asyncpg_dsn
from shop.messaging.testing import eventually, running
from shop.notification.adapters.retention import retained_tables
from shop.notification.bootstrap import build_worker
from shop.notification.migrations import migrate_async
from shop.notification.settings import NotificationRetentionSettings, NotificationSettings

RETENTION = NotificationRetentionSettings(
    sent_emails=timedelta(days=30),
    interval=0.05,
    batch_size=1000,
    batch_pause=0,
)
A_WHOLE_ROUND = (datetime.min.replace(tzinfo=UTC), datetime.now(UTC), 1000)
"""A batch's parameters: from the beginning, up to now, a thousand rows."""
# ``$1`` confirmations sent ``$2`` days ago, the first to ``$3``@example.com.
_SENT = """
    INSERT INTO order_notifications (order_id, kind, recipient, message_id, event_id, sent_at)
    SELECT gen_random_uuid(), 'order_confirmation', $3 || i || '@example.com',
           '<' || i || '@skincare-shop.example>', gen_random_uuid(),
           now() - make_interval(days => $2)
    FROM generate_series(1, $1) AS i
"""


async def settings_of(database_url: str, namespace: str) -> NotificationSettings:
    await migrate_async(database_url)
    return NotificationSettings(
        environment="test",
        database_url=database_url,
        messaging=MessagingSettings(namespace=namespace),
        retention=RETENTION,
        log_json=False,
    )


async def test_the_worker_deletes_the_marks_past_their_retention_and_no_younger(
    database_url: str, unique_name: str
) -> None:
    settings = await settings_of(database_url, unique_name)
    connection = await asyncpg.connect(asyncpg_dsn(database_url))
    try:
        await connection.execute(_SENT, 2500, 31, "old-")
        await connection.execute(_SENT, 300, 29, "young-")
        async with running(build_worker(settings, health_port=0)) as worker:

            def deleted(table: str) -> float:
                name = "messaging_retention_deleted_total"
                return worker.metrics.registry.get_sample_value(name, {"table": table}) or 0.0

            async def cleaned() -> bool:
                return deleted("order_notifications") == 2500

            await eventually(cleaned, what="the worker's retention round")
        kept = await connection.fetch("SELECT recipient FROM order_notifications")
    finally:
        await connection.close()
    assert len(kept) == 300
    assert all(row["recipient"].startswith("young-") for row in kept)


async def test_each_batch_reads_the_marks_along_the_index_the_migrations_made(
    database_url: str, unique_name: str
) -> None:
    await settings_of(database_url, unique_name)
    (batch,) = [t.batch for t in retained_tables(RETENTION) if t.name == "order_notifications"]
    connection = await asyncpg.connect(asyncpg_dsn(database_url))
    try:
        await connection.execute("SET enable_seqscan = off")
        plan = await connection.fetch("EXPLAIN " + batch, *A_WHOLE_ROUND)
    finally:
        await connection.close()
    assert "ix_order_notifications_sent_at" in "\n".join(row[0] for row in plan)
