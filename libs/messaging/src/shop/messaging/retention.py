"""Retention of the tables that grow with traffic: rows past their retention are deleted
(or a column of theirs cleared), in rounds.

A round deletes every row older than its start minus the retention, a batch of bounded size
at a time, oldest first along an index of the rows' time, until a batch comes back short;
between batches it pauses, so that even a large backlog of old rows (after a retention was
shortened, or the cleanup could not reach the database for a while) is worked off without
hogging Postgres. Each batch reads the index from where the previous one ended, so that the
entries of the rows it deleted (dead until a vacuum) are not walked again.

Two runners, one leader per database for each:

- the outbox's :class:`OutboxCleanup` runs beside the relay that leads (the relay's advisory
  lock), on a connection of its own, so a round never delays a batch being published; it
  touches sent rows only, which the relay and the checkout never lock;
- every other table's :class:`TableRetention` runs in :class:`Retention`, a worker job that
  takes an advisory lock of its own on its connection: every replica of a worker runs the
  job, and only the one holding the lock cleans, so replicas never race over the same rows.
"""

from __future__ import annotations

import asyncio
import time
import weakref
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Final

import asyncpg
import structlog
from prometheus_client import CollectorRegistry, Counter, Gauge
from pydantic import BaseModel, Field, field_validator

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
CLEANUP_LOCK_TIMEOUT: Final = "2s"
"""How long a cleanup's statement waits for a lock before its round gives up (the next
round tries again): one queued behind a migration's lock would hold up every request and
consumer queued behind it in turn."""
CLEANUP_STATEMENT_TIMEOUT: Final = "60s"
"""How long a cleanup's statement may run: a batch takes tens of milliseconds."""
_CUTOFF = "SELECT now() - make_interval(secs => $1)"
# One batch of the outbox: the oldest sent rows before the round's cutoff, read from the
# index of sent rows where the previous batch ended, deleted by primary key.
_DELETE_OUTBOX_BATCH = """
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

LONGEST_REDELIVERY: Final = timedelta(days=14)
"""The longest a message may come back after a consumer handled it: SQS keeps a message,
and a dead-letter queue its letters, 14 days at most (its largest ``MessageRetentionPeriod``,
the one this library gives its dead-letter queues), and a letter redriven on its last day
is delivered again then; Kafka keeps a topic's records 7 days by default. A record that
protects exactly-once against redeliveries (an inbox row, a sent e-mail's mark) must be
kept at least this long, or a late redelivery would be handled, or sent, a second time.
Should dead letters be kept longer than this, this floor must follow them."""


async def connect_for_cleanup(dsn: str, name: str) -> asyncpg.Connection:
    """A cleanup's own connection to ``dsn``, with its timeouts, and named
    ``shop-retention:<name>`` so that its session is told apart in ``pg_stat_activity``."""
    return await asyncpg.connect(
        dsn,
        server_settings={
            "application_name": f"shop-retention:{name}",
            "lock_timeout": CLEANUP_LOCK_TIMEOUT,
            "statement_timeout": CLEANUP_STATEMENT_TIMEOUT,
        },
    )


def at_least(value: timedelta, floor: timedelta, rule: str) -> timedelta:
    """``value`` when it is not shorter than ``floor``; else a refusal that says ``rule``,
    the guarantee a shorter retention would break."""
    if value < floor:
        raise ValueError(f"must be at least {_days(floor)}: {rule}")
    return value


def _days(span: timedelta) -> str:
    days = span / timedelta(days=1)
    return f"{days:g} day" + ("" if days == 1 else "s")


class RetentionSettings(BaseModel):
    """How a service's retention cleanup works off its tables. Each service's settings
    extend it with how long each of its tables keeps its rows (an ISO 8601 duration or
    seconds, e.g. ``SHOP_ORDER_RETENTION__INBOX=P30D``)."""

    interval: float = Field(default=600.0, gt=0)
    """Seconds between rounds; also how often a replica that does not lead tries to take
    over. A table holds about its retention plus this worth of rows."""
    batch_size: int = Field(default=5000, ge=1)
    """Rows one statement deletes at most (a few tens of milliseconds of work)."""
    batch_pause: float = Field(default=0.05, ge=0)
    """Pause between a round's statements, so that a large round leaves Postgres to the
    requests and the consumers."""


class InboxRetentionSettings(RetentionSettings):
    """The retention of a service whose consumers keep an inbox."""

    inbox: timedelta = timedelta(days=30)
    """How long an inbox row (a message a consumer handled) is kept. The row is what makes
    a redelivery a duplicate, so it must outlive the longest time a message can come back
    (retries, dead letters redriven later): at least :data:`LONGEST_REDELIVERY`."""

    @field_validator("inbox")
    @classmethod
    def inbox_outlives_redeliveries(cls, value: timedelta) -> timedelta:
        return at_least(
            value,
            LONGEST_REDELIVERY,
            "an inbox row must outlive the longest time a message can come back (retries, "
            "dead letters redriven later), or the redelivery is handled twice",
        )


@dataclass(frozen=True, slots=True)
class TableRetention:
    """What one cleanup removes, and when: ``batch`` is one statement of a round (see
    :func:`deleting`), ``retention`` how old a row must be before it goes; ``name`` labels
    its metrics and logs."""

    name: str
    batch: str
    retention: timedelta

    def __post_init__(self) -> None:
        # The services' settings hold each table's floor; this is the library's own: a
        # cutoff at or after the round's start would delete rows just written.
        if self.retention <= timedelta(0):
            raise ValueError(f"{self.name}: retention must be positive, not {self.retention}")


def deleting(table: str, column: str) -> str:
    """The batch that deletes the rows of ``table`` whose ``column`` (a time, indexed) is
    older than the round's cutoff: ``$1`` where the previous batch ended, ``$2`` the
    cutoff, ``$3`` the batch's size; it answers the rows deleted and the last one's time.
    Rows are deleted by their ``ctid``, read in the same statement: a row updated meanwhile
    has moved and is left for the next round."""
    return f"""
        WITH deleted AS (
            DELETE FROM {table} WHERE ctid = ANY(ARRAY(
                SELECT ctid FROM {table}
                WHERE {column} >= $1 AND {column} < $2
                ORDER BY {column}
                LIMIT $3))
            RETURNING {column})
        SELECT count(*), max({column}) FROM deleted
    """


def inbox_retention(settings: InboxRetentionSettings) -> TableRetention:
    """The inbox's retention (the library's table, the same in every service)."""
    return TableRetention("inbox", deleting("inbox", "processed_at"), settings.inbox)


@dataclass(frozen=True, slots=True)
class CleanupRound:
    """What one round did: rows deleted, statements run, how long it took, and how much of
    that its statements took (the pauses between them left out: the cost to Postgres)."""

    deleted: int
    batches: int
    seconds: float
    busy_seconds: float


async def clean_in_batches(
    connection: asyncpg.Connection,
    batch: str,
    *,
    retention_seconds: float,
    batch_size: int,
    batch_pause: float,
    counted: Callable[[int], object],
) -> CleanupRound:
    """One round of ``batch`` on ``connection``: every row older than now minus the
    retention, ``batch_size`` a statement, ``batch_pause`` s between statements; each
    statement's rows are ``counted`` as it ends (a metric shows a long round's progress)."""
    started = time.perf_counter()
    cutoff = await connection.fetchval(_CUTOFF, retention_seconds)
    after, deleted, batches, busy = _BEGINNING, 0, 0, time.perf_counter() - started
    while True:
        statement_started = time.perf_counter()
        count, last = await connection.fetchrow(batch, after, cutoff, batch_size)
        busy += time.perf_counter() - statement_started
        batches += 1
        deleted += count
        counted(count)
        if count < batch_size:
            break
        after = last
        await asyncio.sleep(batch_pause)
    return CleanupRound(deleted, batches, time.perf_counter() - started, busy)


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
                        connection = await connect_for_cleanup(self.dsn, "outbox")
                    await self.clean(connection)
                except CONNECTION_FAILURES as error:
                    RetentionMetrics.of(self.metrics.registry).failures.labels("outbox").inc()
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
        retention = RetentionMetrics.of(self.metrics.registry)
        deleted = retention.deleted.labels("outbox")

        def counted(rows: int) -> None:
            self.metrics.relay_cleanup_deleted.inc(rows)
            deleted.inc(rows)

        done = await clean_in_batches(
            connection,
            _DELETE_OUTBOX_BATCH,
            retention_seconds=self.retention_seconds,
            batch_size=self.batch_size,
            batch_pause=self.batch_pause,
            counted=counted,
        )
        retention.round_done("outbox", done)
        return done


class RetentionMetrics:
    """Each table's cleanup, labelled by its name (``outbox`` for the relay's, else its
    :attr:`TableRetention.name`; :data:`EVERY_TABLE` for a failure of the job's connection):
    rows deleted (or cleared), rounds, failed rounds, the time their statements took, when
    the last round ended; and whether this process leads. One set per registry
    (:meth:`of`): a worker's relay and its retention job share one."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.registry = registry
        self.deleted = Counter(
            "messaging_retention_deleted",
            "Rows deleted (or, for a column's retention, cleared) by each table's cleanup.",
            ("table",),
            registry=registry,
        )
        self.rounds = Counter(
            "messaging_retention_rounds",
            "Cleanup rounds each table went through.",
            ("table",),
            registry=registry,
        )
        self.busy_seconds = Counter(
            "messaging_retention_busy_seconds",
            "Time each table's cleanup statements took (the pauses between them left out).",
            ("table",),
            registry=registry,
        )
        self.failures = Counter(
            "messaging_retention_failures",
            'Cleanup rounds of each table that failed (logged with the error); table="*":'
            " the retention job's connection could not be made or was lost, every table's"
            " round with it.",
            ("table",),
            registry=registry,
        )
        self.last_round = Gauge(
            "messaging_retention_last_round_timestamp_seconds",
            "When each table's last cleanup round ended (Unix time).",
            ("table",),
            registry=registry,
        )
        self.leader = Gauge(
            "messaging_retention_leader",
            "1 while this process holds its database's retention lock and cleans.",
            registry=registry,
        )

    @classmethod
    def of(cls, registry: CollectorRegistry) -> RetentionMetrics:
        """The retention metrics of ``registry``, registered there the first time."""
        metrics = _REGISTERED.get(registry)
        if metrics is None:
            metrics = _REGISTERED[registry] = cls(registry)
        return metrics

    def round_done(self, table: str, done: CleanupRound) -> None:
        self.rounds.labels(table).inc()
        self.busy_seconds.labels(table).inc(done.busy_seconds)
        self.last_round.labels(table).set(time.time())
        if done.deleted:
            log.info(
                "retention cleanup",
                table=table,
                deleted=done.deleted,
                batches=done.batches,
                seconds=round(done.seconds, 3),
            )


EVERY_TABLE: Final = "*"
"""The ``table`` label of a failure of the retention job's connection: it costs every
table's round."""

_REGISTERED: weakref.WeakKeyDictionary[CollectorRegistry, RetentionMetrics] = (
    weakref.WeakKeyDictionary()
)


class Retention:
    def __init__(
        self,
        dsn: str,
        tables: Sequence[TableRetention],
        *,
        settings: RetentionSettings,
        metrics: Metrics,
        name: str,
    ) -> None:
        """Clean ``tables`` of the database at ``dsn`` (an asyncpg DSN): a round of each
        every ``settings.interval`` s, while this process holds the advisory lock of
        ``name`` (the service's: one leader per database, whichever replica gets there
        first), on a connection of its own (:func:`connect_for_cleanup`)."""
        self.dsn = dsn
        self.tables = list(tables)
        self.settings = settings
        self.metrics = RetentionMetrics.of(metrics.registry)
        self.name = name
        self.lock_key = zlib.crc32(f"shop.messaging.retention:{name}".encode())
        self.is_leader = False
        self.lock_attempts = 0
        """Times the database answered this process's try to take the lock."""

    async def run(self, stopping: asyncio.Event) -> None:
        """A worker's job (:data:`shop.messaging.Job`): clean until ``stopping`` is set,
        then stop at once, mid-round if need be (the next leader's round goes on)."""
        cleaning = asyncio.create_task(self.clean_every_interval())
        waiting = asyncio.create_task(stopping.wait())
        try:
            await asyncio.wait({cleaning, waiting}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in (cleaning, waiting):
                task.cancel()
            await asyncio.wait({cleaning, waiting})
        if not cleaning.cancelled():
            # It handles database failures itself and ends only on a bug: the worker
            # fails with it, loudly, rather than let the tables grow.
            cleaning.result()

    async def clean_every_interval(self) -> None:
        """Take the lock if free, and while holding it a round of every table; then again
        every interval, until cancelled. A database failure costs the rest of its round
        and the lead (the lock goes with the connection): the next try connects again."""
        connection: asyncpg.Connection | None = None
        try:
            while True:
                try:
                    if connection is None:
                        connection = await connect_for_cleanup(self.dsn, self.name)
                    if not self.is_leader:
                        await self._try_to_lead(connection)
                    if self.is_leader:
                        for table in self.tables:
                            await self._clean_or_report(connection, table)
                except CONNECTION_FAILURES as error:
                    self.metrics.failures.labels(EVERY_TABLE).inc()
                    log.warning(
                        "retention cleanup failed; the next round tries again",
                        error=repr(error),
                        retry_in=self.settings.interval,
                    )
                    self._set_leader(False)
                    if connection is not None:
                        connection.terminate()
                        connection = None
                await asyncio.sleep(self.settings.interval)
        finally:
            self._set_leader(False)
            if connection is not None:
                # Closing the connection lets go of the lock, for another replica; one the
                # server lost or that does not answer goes at once, and its lock with it.
                try:
                    await connection.close(timeout=5)
                except (*CONNECTION_FAILURES, TimeoutError):
                    connection.terminate()

    async def clean(self, connection: asyncpg.Connection, table: TableRetention) -> CleanupRound:
        """One round of ``table`` on ``connection`` (which must hold the lock)."""
        done = await clean_in_batches(
            connection,
            table.batch,
            retention_seconds=table.retention.total_seconds(),
            batch_size=self.settings.batch_size,
            batch_pause=self.settings.batch_pause,
            counted=self.metrics.deleted.labels(table.name).inc,
        )
        self.metrics.round_done(table.name, done)
        return done

    async def _clean_or_report(self, connection: asyncpg.Connection, table: TableRetention) -> None:
        """A round of ``table``; an error of its statement (a table its migrations did not
        make yet, a statement timeout) is logged and counted, and costs that table's round
        alone, not the other tables'. A lost connection still ends the whole round."""
        try:
            await self.clean(connection, table)
        except asyncpg.PostgresError as error:
            self.metrics.failures.labels(table.name).inc()
            log.warning(
                "retention cleanup of a table failed; its next round tries again",
                table=table.name,
                error=repr(error),
                retry_in=self.settings.interval,
            )
            if connection.is_closed():
                raise

    async def _try_to_lead(self, connection: asyncpg.Connection) -> None:
        took = await connection.fetchval("SELECT pg_try_advisory_lock($1)", self.lock_key)
        self.lock_attempts += 1
        if took:
            log.info("retention took its database's lock")
            self._set_leader(True)

    def _set_leader(self, leader: bool) -> None:
        self.is_leader = leader
        self.metrics.leader.set(1 if leader else 0)
