"""payment-service's worker clears the raw bodies of notifications processed longer ago
than their retention, a batch at a time along their index, and deletes old inbox rows;
every notification's row stays, and so do the bodies of notifications not processed yet,
younger ones, and those of a flagged payment."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

import asyncpg

from shop.messaging.relay import asyncpg_dsn
from shop.messaging.testing import eventually, running
from shop.payment.adapters.retention import CLEAR_RAW_BODIES
from shop.payment.bootstrap import build_worker
from shop.payment.settings import PaymentRetentionSettings, PaymentSettings

RETENTION = PaymentRetentionSettings(
    inbox=timedelta(days=14),
    raw_bodies=timedelta(days=30),
    interval=0.05,
    batch_size=1000,
    batch_pause=0,
)
A_WHOLE_ROUND = (datetime.min.replace(tzinfo=UTC), datetime.now(UTC), 1000)
"""A batch's parameters: from the beginning, up to now, a thousand rows."""
_PAYMENT = """
    INSERT INTO payments (id, order_id, order_number, amount, currency, status, flagged,
                          created_at, updated_at, paid_at)
    VALUES (gen_random_uuid(), $1, $2, 150000, 'IDR', 'paid', $3, now() - interval '40 days',
            now() - interval '40 days', now() - interval '40 days')
"""
# ``$1`` notifications of order ``$2``, received 40 days ago, processed ``$3`` days ago
# (never, if NULL), their event ids starting with ``$4``.
_NOTIFICATIONS = """
    INSERT INTO payment_events (provider, provider_event_id, type, raw_body, meaning,
                                order_id, amount, currency, provider_payment_id,
                                received_at, processed_at, outcome)
    SELECT 'shop', $4 || i, 'payment.succeeded', '{"raw": "body"}', 'paid', $2, 150000,
           'IDR', 'charge-1', now() - interval '40 days',
           now() - make_interval(days => $3), 'applied'
    FROM generate_series(1, $1) AS i
"""


async def test_the_worker_clears_old_processed_bodies_and_keeps_every_row(
    payment_settings: PaymentSettings,
) -> None:
    settings = payment_settings.model_copy(update={"retention": RETENTION})
    order, flagged_order = uuid.uuid4(), uuid.uuid4()
    connection = await asyncpg.connect(asyncpg_dsn(settings.database_url))
    try:
        await connection.execute(_PAYMENT, order, "SK-AAAA-0001", None)
        await connection.execute(_PAYMENT, flagged_order, "SK-AAAA-0002", "gateway says unpaid")
        await connection.execute(_NOTIFICATIONS, 2500, order, 31, "old-")
        await connection.execute(_NOTIFICATIONS, 200, order, 29, "young-")
        await connection.execute(_NOTIFICATIONS, 3, order, None, "waiting-")
        await connection.execute(_NOTIFICATIONS, 4, flagged_order, 31, "flagged-")
        await connection.execute(
            "INSERT INTO inbox (consumer, event_id, message_type, processed_at)"
            " SELECT 'payment-service', gen_random_uuid(), 'order.created',"
            " now() - make_interval(days => 13 + 2 * (i % 2)) FROM generate_series(1, 100) AS i"
        )
        async with running(build_worker(settings, health_port=0, gateways={})) as worker:

            def cleaned(table: str) -> float:
                name = "messaging_retention_deleted_total"
                return worker.metrics.registry.get_sample_value(name, {"table": table}) or 0.0

            async def round_done() -> bool:
                return (cleaned("payment_events.raw_body"), cleaned("inbox")) == (2500, 50)

            await eventually(round_done, what="the worker's retention round")
        rows = await connection.fetch(
            "SELECT split_part(provider_event_id, '-', 1) AS kind, raw_body IS NULL AS cleared,"
            " count(*) FROM payment_events GROUP BY 1, 2 ORDER BY 1, 2"
        )
        inbox = await connection.fetchval("SELECT count(*) FROM inbox")
    finally:
        await connection.close()
    assert [tuple(row) for row in rows] == [
        ("flagged", False, 4),
        ("old", True, 2500),
        ("waiting", False, 3),
        ("young", False, 200),
    ]
    assert inbox == 50


async def test_each_batch_reads_the_bodies_kept_along_the_index_the_migrations_made(
    payment_settings: PaymentSettings,
) -> None:
    connection = await asyncpg.connect(asyncpg_dsn(payment_settings.database_url))
    try:
        await connection.execute("SET enable_seqscan = off")
        plan = await connection.fetch("EXPLAIN " + CLEAR_RAW_BODIES, *A_WHOLE_ROUND)
    finally:
        await connection.close()
    assert "ix_payment_events_raw_body_kept" in "\n".join(row[0] for row in plan)
