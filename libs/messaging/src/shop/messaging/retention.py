"""The outbox's retention: sent rows older than the retention are deleted, in rounds.

A round deletes every row sent before its start minus the retention, a batch of bounded
size at a time, oldest first along the index of sent rows, until a batch comes back short;
between batches it pauses, so that even a large backlog of old rows (after a retention was
shortened, or the cleanup could not reach the database for a while) is worked off without
hogging Postgres. It runs beside the relay on a connection of its own, so a round never
delays a batch being published, and it touches sent rows only: the relay and the checkout
write and lock unsent rows, so they never wait for it.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Final

import asyncpg
import structlog

from shop.messaging.metrics import Metrics

log = structlog.get_logger("shop.messaging.retention")

CONNECTION_FAILURES: Final = (
    OSError,
    asyncpg.PostgresError,
    asyncpg.InterfaceError,
    # What asyncpg says when a statement meets a connection the server has just closed.
    asyncpg.InternalClientError,
)
"""What a relay's or a cleanup's own connection may fail with: it connects again."""
_CUTOFF = "SELECT now() - make_interval(secs => $1)"
# One batch: the oldest sent rows before the round's cutoff, read from the index of sent
# rows where the previous batch ended (so that the entries of the rows it deleted are not
# walked again), deleted by primary key.
_DELETE_BATCH = """
    WITH deleted AS (
        DELETE FROM outbox WHERE id = ANY(ARRAY(
            SELECT id FROM outbox
            WHERE published_at IS NOT NULL AND published_at >= $1 AND published_at < $2
            ORDER BY published_at
            LIMIT $3))
        RETURNING published_at)
    SELECT count(*), max(published_at) FROM deleted
"""
_BEGINNING: Final = datetime.min.replace(tzinfo=UTC)
"""Where a round's first batch starts reading."""


@dataclass(frozen=True, slots=True)
class CleanupRound:
    """What one round did: rows deleted, statements run, and how long it took."""

    deleted: int
    batches: int
    seconds: float


class OutboxCleanup:
    def __init__(
        self,
        dsn: str,
        *,
        retention_seconds: float,
        interval: float,
        batch_size: int,
        batch_pause: float,
        metrics: Metrics,
    ) -> None:
        """Delete the sent rows of the outbox at ``dsn`` (an asyncpg DSN) once they are
        ``retention_seconds`` old: a round every ``interval`` s, ``batch_size`` rows a
        statement at most, ``batch_pause`` s between a round's statements."""
        if retention_seconds < 0 or batch_pause < 0:
            raise ValueError("retention_seconds and batch_pause must not be negative")
        if interval <= 0 or batch_size < 1:
            raise ValueError("interval and batch_size must be positive")
        self.dsn = dsn
        self.retention_seconds = retention_seconds
        self.interval = interval
        self.batch_size = batch_size
        self.batch_pause = batch_pause
        self.metrics = metrics

    async def run(self) -> None:
        """A round at once, then one every interval, until cancelled. A database failure
        costs the rest of its round, never the relay: the next round tries again."""
        connection: asyncpg.Connection | None = None
        try:
            while True:
                try:
                    if connection is None:
                        connection = await asyncpg.connect(self.dsn)
                    await self.clean(connection)
                except CONNECTION_FAILURES as error:
                    log.warning(
                        "outbox cleanup failed; the next round tries again",
                        error=repr(error),
                        retry_in=self.interval,
                    )
                    if connection is not None:
                        connection.terminate()
                        connection = None
                await asyncio.sleep(self.interval)
        finally:
            if connection is not None:
                await connection.close(timeout=5)

    async def clean(self, connection: asyncpg.Connection) -> CleanupRound:
        """One round on ``connection``: every row sent before now minus the retention."""
        started = time.perf_counter()
        cutoff = await connection.fetchval(_CUTOFF, self.retention_seconds)
        after, deleted, batches = _BEGINNING, 0, 0
        while True:
            count, last = await connection.fetchrow(_DELETE_BATCH, after, cutoff, self.batch_size)
            batches += 1
            deleted += count
            self.metrics.relay_cleanup_deleted.inc(count)
            if count < self.batch_size:
                break
            after = last
            await asyncio.sleep(self.batch_pause)
        done = CleanupRound(deleted, batches, time.perf_counter() - started)
        if done.deleted:
            log.info(
                "outbox cleanup",
                deleted=done.deleted,
                batches=done.batches,
                seconds=round(done.seconds, 3),
            )
        return done
