"""Retention of the inbox on a real Postgres: a round deletes every row past its retention
and none younger, a batch at a time along the inbox's index; one replica of a database
cleans while the others wait, and another takes over once it stops or loses its
connection."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta

import asyncpg
import pytest
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from shop.messaging.metrics import Metrics
from shop.messaging.relay import asyncpg_dsn
from shop.messaging.retention import (
    InboxRetentionSettings,
    OutboxCleanup,
    Retention,
    TableRetention,
    deleting,
    inbox_retention,
)
from shop.messaging.testing import eventually, wait_until

SETTINGS = InboxRetentionSettings(inbox=timedelta(days=14), batch_size=1000, batch_pause=0)
QUICK = SETTINGS.model_copy(update={"interval": 0.05})
A_WHOLE_ROUND = (datetime.min.replace(tzinfo=UTC), datetime.now(UTC), 1000)
"""A batch's parameters: from the beginning, up to now, a thousand rows."""
_LOCK_HOLDER = """
    SELECT pid FROM pg_locks
    WHERE locktype = 'advisory' AND granted AND classid = 0 AND objid = $1::bigint::oid
"""
"""The session holding a retention's advisory lock (a key under 2**32: no high half)."""
_SEED = """
    INSERT INTO inbox (consumer, event_id, message_type, processed_at)
    SELECT 'consumer-' || i % 3, gen_random_uuid(), 'order.created',
           now() - make_interval(days => $2)
    FROM generate_series(1, $1) AS i
"""


@pytest.fixture
async def connection(
    sessions: async_sessionmaker[AsyncSession], database_url: str
) -> AsyncIterator[asyncpg.Connection]:
    """A connection to a fresh database with the inbox (and its index)."""
    connection = await asyncpg.connect(asyncpg_dsn(database_url))
    try:
        yield connection
    finally:
        await connection.close()


def retention_of(database_url: str, settings: InboxRetentionSettings = QUICK) -> Retention:
    return Retention(
        asyncpg_dsn(database_url),
        [inbox_retention(settings)],
        settings=settings,
        metrics=Metrics(),
        name="test-service",
    )


def sample(retention: Retention, name: str, **labels: str) -> float:
    return retention.metrics.registry.get_sample_value(name, labels) or 0.0


def deleted(retention: Retention) -> float:
    return sample(retention, "messaging_retention_deleted_total", table="inbox")


async def test_a_round_deletes_the_rows_past_their_retention_and_none_younger_in_batches(
    connection: asyncpg.Connection, database_url: str
) -> None:
    await connection.execute(_SEED, 2500, 20)
    await connection.execute(_SEED, 300, 13)
    retention = retention_of(database_url, SETTINGS)

    done = await retention.clean(connection, inbox_retention(SETTINGS))

    assert (done.deleted, done.batches) == (2500, 3)
    left = await connection.fetchrow(
        "SELECT count(*), min(processed_at) > now() - interval '14 days' FROM inbox"
    )
    assert tuple(left) == (300, True)
    assert deleted(retention) == 2500
    last_round = "messaging_retention_last_round_timestamp_seconds"
    assert sample(retention, last_round, table="inbox") > 0


async def test_a_batch_reads_the_inbox_along_its_index_of_handled_times(
    connection: asyncpg.Connection,
) -> None:
    await connection.execute("SET enable_seqscan = off")
    plan = await connection.fetch("EXPLAIN " + inbox_retention(SETTINGS).batch, *A_WHOLE_ROUND)
    assert "ix_inbox_processed_at" in "\n".join(row[0] for row in plan)


@contextlib.asynccontextmanager
async def running(retention: Retention) -> AsyncIterator[asyncio.Event]:
    """Run ``retention`` as a worker runs its jobs; the event stops it."""
    stopping = asyncio.Event()
    job = asyncio.create_task(retention.run(stopping))
    try:
        yield stopping
    finally:
        stopping.set()
        await job


async def test_one_replica_cleans_a_database_and_another_takes_over_once_it_stops(
    connection: asyncpg.Connection, database_url: str
) -> None:
    first, second = retention_of(database_url), retention_of(database_url)
    await connection.execute(_SEED, 1500, 20)
    async with running(first) as stopping_first:
        await wait_until(lambda: deleted(first) == 1500, what="the first replica's round")
        async with running(second):
            await wait_until(
                lambda: second.lock_attempts >= 3, what="several of the second replica's tries"
            )
            assert (first.is_leader, second.is_leader) == (True, False)
            stopping_first.set()
            await wait_until(lambda: second.is_leader, what="the second replica to lead")
            await connection.execute(_SEED, 700, 20)
            await wait_until(lambda: deleted(second) == 700, what="the second replica's round")
    assert deleted(first) == 1500
    assert (first.is_leader, second.is_leader) == (False, False)


async def test_a_lost_connection_costs_the_lead_and_the_next_try_takes_it_again(
    connection: asyncpg.Connection, database_url: str
) -> None:
    retention = retention_of(database_url)
    async with running(retention):
        await wait_until(lambda: retention.is_leader, what="the lead")
        leader = await connection.fetchval(_LOCK_HOLDER, retention.lock_key)
        assert leader is not None
        # As if its host vanished: the server ends the session, and the lock with it.
        assert await connection.fetchval("SELECT pg_terminate_backend($1)", leader) is True
        await connection.execute(_SEED, 400, 20)

        async def cleaned_again() -> bool:
            return deleted(retention) == 400 and retention.is_leader

        await eventually(cleaned_again, what="a round after reconnecting")
        assert sample(retention, "messaging_retention_failures_total", table="*") >= 1
        holder = await connection.fetchval(_LOCK_HOLDER, retention.lock_key)
        assert holder not in (None, leader), "the lock is held again, by the new session"
    assert await connection.fetchval("SELECT count(*) FROM inbox") == 0


async def test_a_table_whose_round_fails_costs_its_own_round_and_not_the_others(
    connection: asyncpg.Connection, database_url: str
) -> None:
    missing = TableRetention("missing", deleting("not_migrated_yet", "created_at"), SETTINGS.inbox)
    retention = Retention(
        asyncpg_dsn(database_url),
        [missing, inbox_retention(QUICK)],
        settings=QUICK,
        metrics=Metrics(),
        name="test-service",
    )
    await connection.execute(_SEED, 300, 20)
    async with running(retention):
        await wait_until(lambda: deleted(retention) == 300, what="the inbox's round")
        assert retention.is_leader
    assert sample(retention, "messaging_retention_failures_total", table="missing") >= 1
    assert sample(retention, "messaging_retention_failures_total", table="inbox") == 0


async def test_a_round_queued_behind_a_migrations_lock_gives_up_and_its_session_is_named(
    connection: asyncpg.Connection, database_url: str
) -> None:
    retention = retention_of(database_url)
    failures = "messaging_retention_failures_total"
    async with connection.transaction():
        # What a migration altering the inbox holds until it commits: a round that waited
        # for it would hold up every write to the inbox queued behind the round.
        await connection.execute("LOCK TABLE inbox IN ACCESS EXCLUSIVE MODE")
        async with running(retention):
            await wait_until(
                lambda: sample(retention, failures, table="inbox") >= 1,
                what="the round to give up waiting for the lock",
            )
            leader = await connection.fetchval(_LOCK_HOLDER, retention.lock_key)
            named = await connection.fetchval(
                "SELECT application_name FROM pg_stat_activity WHERE pid = $1", leader
            )
    assert named == "shop-retention:test-service"


async def test_a_cleanup_that_cannot_reach_its_database_counts_each_failed_try(
    database_url: str,
) -> None:
    unreachable = asyncpg_dsn(database_url).rsplit("/", 1)[0] + "/no_such_database"
    retention = Retention(
        unreachable,
        [inbox_retention(QUICK)],
        settings=QUICK,
        metrics=Metrics(),
        name="test-service",
    )
    outbox = OutboxCleanup(
        unreachable,
        retention_seconds=60,
        interval=QUICK.interval,
        batch_size=1000,
        batch_pause=0,
        metrics=Metrics(),
    )
    failures = "messaging_retention_failures_total"
    registry = outbox.metrics.registry

    def outbox_failures() -> float:
        return registry.get_sample_value(failures, {"table": "outbox"}) or 0.0

    cleaning_outbox = asyncio.create_task(outbox.run())
    try:
        async with running(retention):
            await wait_until(
                lambda: sample(retention, failures, table="*") >= 2, what="the job's tries"
            )
        await wait_until(lambda: outbox_failures() >= 2, what="the outbox's tries")
    finally:
        cleaning_outbox.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await cleaning_outbox
