"""The outbox relay: publishes committed outbox rows, in id order, and marks them sent.

One relay publishes at a time per database: replicas compete for a session-level advisory
lock, and the one holding it claims, publishes and marks rows on that very connection. If
that connection dies, so does the lock, and a standby takes over within its takeover
interval; while both are healthy only the holder publishes, so no row goes out twice and
each key's rows go out in order. A publishing failure leaves the rows unsent and backs off:
a broker outage only grows the backlog.

While it leads, a relay also runs the outbox's retention cleanup (``retention.py``) beside
its publishing, on a connection of the cleanup's own, so that deleting old rows never holds
up a batch.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import time
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import asyncpg
import pydantic_core
import structlog
from pydantic import BaseModel, Field

from shop.messaging.errors import PublishError
from shop.messaging.message import OutgoingMessage
from shop.messaging.metrics import Metrics
from shop.messaging.retention import CONNECTION_FAILURES, OutboxCleanup
from shop.messaging.schema import OUTBOX_CHANNEL
from shop.messaging.tracing.spans import publishing
from shop.messaging.transports.base import Transport

log = structlog.get_logger("shop.messaging.relay")

# Rows to send now, in id order, then scheduled rows that have fallen due (each read by its
# own index). A due row counts as created when it fell due, for the lag it reports.
_CLAIM = """
    SELECT * FROM (
        (SELECT id, key, message_type, headers, body, created_at FROM outbox
         WHERE published_at IS NULL AND due_at IS NULL AND (id < $2 OR id > $3)
         ORDER BY id LIMIT $1)
        UNION ALL
        (SELECT id, key, message_type, headers, body, due_at FROM outbox
         WHERE published_at IS NULL AND due_at <= now() AND (id < $2 OR id > $3)
         ORDER BY due_at LIMIT $1)
    ) AS claimable ORDER BY id LIMIT $1
"""
_MARK_SENT = "UPDATE outbox SET published_at = now() WHERE id = ANY($1::bigint[])"
_BACKLOG = """
    SELECT count(*),
           coalesce(extract(epoch FROM now() - min(coalesce(due_at, created_at))), 0)::float8
    FROM outbox WHERE published_at IS NULL AND (due_at IS NULL OR due_at <= now())
"""


class RelaySettings(BaseModel):
    name: str = "outbox"
    """Relays with the same name over the same database compete for one lock."""
    batch_size: int = Field(default=1000, ge=1)
    poll_interval: float = Field(default=1.0, gt=0)
    """Fallback when a notification is missed (NOTIFY is not delivered while disconnected)."""
    takeover_interval: float = Field(default=1.0, gt=0)
    """How often a standby relay tries to take over."""
    retention_seconds: float = Field(default=7 * 24 * 3600, ge=0)
    """How long sent rows are kept (for inspection) before the cleanup deletes them."""
    cleanup_interval: float = Field(default=60.0, gt=0)
    """How often the leading relay's cleanup runs a round: every row past its retention,
    however many, in batches. The table holds about ``retention_seconds +
    cleanup_interval`` worth of sent rows."""
    cleanup_batch_size: int = Field(default=5000, ge=1)
    """Rows one cleanup statement deletes at most (a few tens of milliseconds of work)."""
    cleanup_batch_pause: float = Field(default=0.05, ge=0)
    """Pause between a round's statements, so that a large round leaves Postgres to the
    relay and the checkouts."""
    stats_interval: float = Field(default=5.0, gt=0)
    backoff_initial: float = Field(default=0.2, gt=0)
    backoff_max: float = Field(default=30.0, gt=0)
    stop_timeout: float = Field(default=10.0, ge=0)
    """How long a stop waits for the batch on its way to be acknowledged, so that it is
    marked sent and not published again by the next leader; what is not acknowledged by
    then stays unsent. Well within a worker's grace period (its ``drain_timeout``)."""


@dataclass(frozen=True, slots=True)
class Backlog:
    unsent: int
    oldest_age_seconds: float


def asyncpg_dsn(database_url: str) -> str:
    """asyncpg takes ``postgresql://``; SQLAlchemy URLs carry a ``+driver``."""
    scheme, rest = database_url.split("://", 1)
    return f"{scheme.split('+')[0]}://{rest}"


class Relay:
    def __init__(
        self,
        database_url: str,
        transport: Transport,
        *,
        settings: RelaySettings | None = None,
        metrics: Metrics | None = None,
    ) -> None:
        """Relay the outbox of the database at ``database_url`` (``postgresql://…``; a
        SQLAlchemy ``+driver`` suffix is dropped) through ``transport``, to the topics its
        naming gives: what one service publishes and what its consumers subscribe to are
        named by the same namespace."""
        self.dsn = asyncpg_dsn(database_url)
        self.transport = transport
        self.naming = transport.naming
        self.settings = settings or RelaySettings()
        self.metrics = metrics or Metrics()
        self.lock_key = zlib.crc32(f"shop.messaging.relay:{self.settings.name}".encode())
        self.is_leader = False
        self.connected = False
        self._stopping = asyncio.Event()
        self._wake = asyncio.Event()
        self._last_stats = 0.0
        self._backoff = self.settings.backoff_initial
        self._topic = functools.lru_cache(maxsize=256)(self.naming.topic)
        self._cleanup = OutboxCleanup(
            self.dsn,
            retention_seconds=self.settings.retention_seconds,
            interval=self.settings.cleanup_interval,
            batch_size=self.settings.cleanup_batch_size,
            batch_pause=self.settings.cleanup_batch_pause,
            metrics=self.metrics,
        )

    def stop(self) -> None:
        self._stopping.set()
        self._wake.set()

    async def run(self) -> None:
        """Publish until :meth:`stop`, reconnecting after database failures."""
        backoff = self.settings.backoff_initial
        while not self._stopping.is_set():
            try:
                await self._serve()
                backoff = self.settings.backoff_initial
            except CONNECTION_FAILURES as error:
                log.warning("relay lost its database connection", error=repr(error))
                await self._pause(backoff)
                backoff = min(backoff * 2, self.settings.backoff_max)

    async def _serve(self) -> None:
        connection: asyncpg.Connection = await asyncpg.connect(self.dsn)
        cleanup: asyncio.Task[None] | None = None
        try:
            # pydantic-core's parser: a row's headers in a quarter of json.loads' time.
            await connection.set_type_codec(
                "jsonb", encoder=json.dumps, decoder=pydantic_core.from_json, schema="pg_catalog"
            )
            await connection.add_listener(OUTBOX_CHANNEL, self._on_notify)
            self.connected = True
            while not self._stopping.is_set():
                if not self.is_leader:
                    await self._try_to_lead(connection)
                    continue
                if cleanup is None:
                    # The lead lasts as long as this connection, and so does the cleanup.
                    cleanup = asyncio.create_task(self._cleanup.run())
                elif cleanup.done():
                    # It handles database failures itself and ends only on a bug: the
                    # relay fails with it, loudly, rather than let the table grow.
                    cleanup.result()
                if await self._publish_while_leading(connection) == "idle":
                    await self._wait_for_work()
        finally:
            try:
                if cleanup is not None and not cleanup.done():
                    await _cancel(cleanup)
            finally:
                self.connected = False
                self._set_leader(False)
                # Closing the connection releases the advisory lock for a standby.
                await connection.close(timeout=5)

    async def _try_to_lead(self, connection: asyncpg.Connection) -> None:
        leader = await connection.fetchval("SELECT pg_try_advisory_lock($1)", self.lock_key)
        if leader:
            log.info("relay took the outbox lock", relay=self.settings.name)
            self._set_leader(True)
        else:
            await self._pause(self.settings.takeover_interval)

    def _set_leader(self, leader: bool) -> None:
        self.is_leader = leader
        self.metrics.relay_leader.set(1 if leader else 0)

    async def _publish_while_leading(self, connection: asyncpg.Connection) -> str:
        """Claim, publish and mark batches, two at a time: while one batch waits for the
        broker's acknowledgements the next is read and handed to the producer, so the
        database and the broker work at once. Returns "idle" when nothing is left to
        publish, "stopping" on :meth:`stop` once the batch in flight is settled."""
        in_flight: _Batch | None = None
        try:
            while not self._stopping.is_set():
                claimed = await connection.fetch(
                    _CLAIM, self.settings.batch_size, *(in_flight.ids if in_flight else (0, 0))
                )
                rows = _behind(in_flight, claimed)
                batch = self._start_publishing(rows) if rows else None
                settled = True
                if in_flight is not None:
                    try:
                        failed = await self._outcome(in_flight)
                        handing_over = not failed and not self._stopping.is_set()
                        if handing_over and batch is None and claimed:
                            # The rows claimed waited on the batch just acknowledged (the
                            # first one's key was in it): they go now, without a second
                            # read, and on their way while that batch is marked. Not after
                            # a stop: they stay for the next leader.
                            rows = list(claimed)
                            batch = self._start_publishing(rows)
                        settled = await self._mark(connection, in_flight, failed)
                    except BaseException:
                        if batch is not None:
                            await batch.abandon()
                        raise
                if not settled:
                    in_flight = None
                    if batch is not None:
                        await batch.abandon()  # it stays unsent: published again later
                    await self._pause(self._backoff)
                    self._backoff = min(self._backoff * 2, self.settings.backoff_max)
                    continue
                in_flight = batch
                await self._report_backlog(connection)
                if in_flight is None and len(rows) == len(claimed):
                    return "idle"
            if in_flight is not None:
                # A stop lets the batch on its way finish and marks it: abandoned, it would
                # go out again from the next leader, a duplicate on every deploy.
                await self._mark(connection, in_flight, await self._outcome(in_flight))
                in_flight = None
            return "stopping"
        except _StoppedWaiting:
            return "stopping"
        finally:
            if in_flight is not None:
                await in_flight.abandon()

    def _start_publishing(self, rows: Sequence[Any]) -> _Batch:
        messages = [self._message(row) for row in rows]
        keys = {row["key"] for row in rows}
        return _Batch(rows, messages, asyncio.create_task(self._publish(messages)), keys)

    async def _publish(self, messages: list[OutgoingMessage]) -> None:
        # A PRODUCER span per row, a child of the trace its row was written in; each message
        # goes out with its span's traceparent.
        with publishing(messages, system=self.transport.name, relay=self.settings.name) as outgoing:
            await self.transport.publish(outgoing)

    async def _outcome(self, batch: _Batch) -> set[int]:
        """Wait for ``batch``'s publication; the indexes of its messages not published."""
        await self._acknowledged(batch)
        try:
            await batch.publishing
        except Exception as error:
            # Whatever the transport raised, the rows it did not confirm stay unsent.
            everything = set(range(len(batch.rows)))
            failed = error.failed if isinstance(error, PublishError) else everything
            self.metrics.relay_publish_failures.inc()
            log.warning(
                "relay could not publish; the rows stay in the outbox",
                failed=len(failed),
                error=repr(error),
                retry_in=self._backoff,
            )
            return failed
        return set()

    async def _mark(self, connection: asyncpg.Connection, batch: _Batch, failed: set[int]) -> bool:
        """Mark what went out of ``batch``; False if some did not."""
        if failed:
            sent = _sent_in_key_order(batch.messages, failed)
            await self._mark_sent(connection, batch.rows, sent)
            return False
        self._backoff = self.settings.backoff_initial
        await self._mark_sent(connection, batch.rows, range(len(batch.rows)))
        return True

    async def _acknowledged(self, batch: _Batch) -> None:
        """Return once ``batch``'s publication has ended; after a stop, wait
        ``stop_timeout`` at most for it, then raise :class:`_StoppedWaiting`: a broker
        that does not answer must not hold the stop (and the lock) for its whole publish
        timeout."""
        if batch.publishing.done():
            return  # the usual case by now: no task to watch the stop with
        stopping = asyncio.create_task(self._stopping.wait())
        try:
            await asyncio.wait({batch.publishing, stopping}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            stopping.cancel()
        if not batch.publishing.done():
            await asyncio.wait({batch.publishing}, timeout=self.settings.stop_timeout)
        if not batch.publishing.done():
            raise _StoppedWaiting

    async def _mark_sent(
        self, connection: asyncpg.Connection, rows: Sequence[Any], indexes: Sequence[int]
    ) -> None:
        if not indexes:
            return
        await connection.execute(_MARK_SENT, [rows[i]["id"] for i in indexes])
        self.metrics.relay_published.inc(len(indexes))
        # One observation a batch, for its oldest row: the lag that matters, at a cost that
        # does not grow with the batch.
        oldest = min(rows[i]["created_at"].timestamp() for i in indexes)
        self.metrics.relay_lag.observe(max(0.0, time.time() - oldest))

    def _message(self, row: Any) -> OutgoingMessage:
        return OutgoingMessage(
            topic=self._topic(row["message_type"]),
            key=row["key"],
            body=bytes(row["body"]),
            headers=row["headers"],
        )

    async def backlog(self, connection: asyncpg.Connection) -> Backlog:
        unsent, age = await connection.fetchrow(_BACKLOG)
        return Backlog(unsent=int(unsent), oldest_age_seconds=float(age))

    async def _report_backlog(self, connection: asyncpg.Connection) -> None:
        now = time.monotonic()
        if now - self._last_stats >= self.settings.stats_interval:
            self._last_stats = now
            backlog = await self.backlog(connection)
            self.metrics.relay_backlog.set(backlog.unsent)
            self.metrics.relay_oldest_unsent_age.set(backlog.oldest_age_seconds)

    def _on_notify(self, *_: object) -> None:
        self._wake.set()

    async def _wait_for_work(self) -> None:
        # The poll interval is the fallback for a notification that never came.
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._wake.wait(), self.settings.poll_interval)
        self._wake.clear()

    async def _pause(self, seconds: float) -> None:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._stopping.wait(), seconds)


class _StoppedWaiting(Exception):
    """The relay was stopped, and its batch on the way was not acknowledged in time."""


@dataclass(slots=True)
class _Batch:
    rows: Sequence[Any]
    messages: list[OutgoingMessage]
    publishing: asyncio.Task[None]
    keys: set[str]
    """Its keys: none of them goes in the next batch while it is on its way."""

    @property
    def ids(self) -> tuple[int, int]:
        """The id range it covers, left out of the next claim while it is in flight."""
        return self.rows[0]["id"], self.rows[-1]["id"]

    async def abandon(self) -> None:
        """Stop the publication and mark nothing: what it did not hand over yet stays
        back, what it did goes out and is published again later (at least once)."""
        self.publishing.cancel()
        await asyncio.wait([self.publishing])
        if not self.publishing.cancelled():
            self.publishing.exception()  # retrieved: the rows stay unsent either way


async def _cancel(task: asyncio.Task[None]) -> None:
    """Cancel ``task`` and wait for it to end; an error it failed with first is raised here
    (the cleanup handles database failures itself, so that would be a bug)."""
    task.cancel()
    await asyncio.wait([task])
    if not task.cancelled():
        task.result()


def _behind(in_flight: _Batch | None, claimed: Sequence[Any]) -> list[Any]:
    """The claimed rows that may go while ``in_flight`` is on its way: those before the
    first row of one of its keys. Should that batch's message of the key fail, a later one
    published meanwhile would reach the consumers first. The rest are claimed again once
    the batch is settled (cut there, and not filtered, so that every row left out is the
    first of the next claim, never held back behind batch after batch)."""
    if in_flight is None:
        return list(claimed)
    for index, row in enumerate(claimed):
        if row["key"] in in_flight.keys:
            return list(claimed[:index])
    return list(claimed)


def _sent_in_key_order(messages: Sequence[OutgoingMessage], failed: set[int]) -> list[int]:
    """The indexes that may be marked sent after a partial failure: published ones, except
    those behind a failed message of the same key (they go again, after it, to keep the
    key's order; consumers drop the duplicate)."""
    blocked_keys = {messages[i].key for i in failed}
    first_failure_of_key: dict[str, int] = {}
    for i in sorted(failed):
        first_failure_of_key.setdefault(messages[i].key, i)
    return [
        i
        for i, message in enumerate(messages)
        if i not in failed
        and not (message.key in blocked_keys and i > first_failure_of_key[message.key])
    ]
