"""The dead letters' retention: a letter kept longer than the retention (months, not the
broker's days) is deleted, in rounds of bounded batches, as the outbox's sent rows are
(:mod:`shop.messaging.retention`); and two gauges per consumer, the letters kept and the
age of the oldest, so that letters nobody handled are seen long before they expire."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import structlog
from prometheus_client import CollectorRegistry, Gauge

from shop.messaging.deadletters import DeadLetterStore

log = structlog.get_logger("shop.messaging.retention")


class DeadLetterGauges:
    def __init__(self, registry: CollectorRegistry) -> None:
        self.kept = Gauge(
            "messaging_dead_letters_kept",
            "Dead letters kept in the service's store, by consumer.",
            ("group",),
            registry=registry,
        )
        self.oldest_age = Gauge(
            "messaging_dead_letters_oldest_age_seconds",
            "Age of the oldest dead letter kept (0 when none), by consumer: compare it "
            "with the retention, after which letters nobody handled are deleted.",
            ("group",),
            registry=registry,
        )


@dataclass(frozen=True, slots=True)
class DeadLetterCleanupRound:
    deleted: int
    batches: int


class DeadLetterCleanup:
    def __init__(
        self,
        store: DeadLetterStore,
        groups: Sequence[str],
        gauges: DeadLetterGauges,
        *,
        retention_seconds: float,
        interval: float,
        batch_size: int,
        batch_pause: float,
    ) -> None:
        """Delete the letters of ``store`` kept longer than ``retention_seconds``: a round
        every ``interval`` s, ``batch_size`` letters a statement, ``batch_pause`` s
        between statements; after each round, set ``gauges`` for ``groups``."""
        if retention_seconds <= 0 or interval <= 0 or batch_size < 1 or batch_pause < 0:
            raise ValueError(
                "retention_seconds, interval and batch_size must be positive, "
                "batch_pause not negative"
            )
        self.store = store
        self.groups = tuple(groups)
        self.gauges = gauges
        self.retention = timedelta(seconds=retention_seconds)
        self.interval = interval
        self.batch_size = batch_size
        self.batch_pause = batch_pause

    async def run(self, stopping: asyncio.Event) -> None:
        """A round at once, then one every interval, until ``stopping`` (a worker's job).
        A failed round is logged and tried again at the next."""
        while not stopping.is_set():
            try:
                await self.clean()
                await self.measure()
            except Exception as error:
                # The database away, most likely: the next round tries again (with the
                # traceback, so that a fault of the code is not mistaken for one).
                log.warning(
                    "dead-letter cleanup failed; the next round tries again",
                    error=repr(error),
                    retry_in=self.interval,
                    exc_info=True,
                )
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stopping.wait(), self.interval)

    async def clean(self) -> DeadLetterCleanupRound:
        """One round: every letter taken in before now minus the retention."""
        cutoff = datetime.now(UTC) - self.retention
        deleted, batches = 0, 0
        while True:
            count = await self.store.delete_stored_before(cutoff, self.batch_size)
            batches += 1
            deleted += count
            if count < self.batch_size:
                break
            await asyncio.sleep(self.batch_pause)
        if deleted:
            log.info("dead-letter cleanup", deleted=deleted, batches=batches)
        return DeadLetterCleanupRound(deleted, batches)

    async def measure(self) -> None:
        now = datetime.now(UTC)
        for summary in await self.store.summary(self.groups):
            self.gauges.kept.labels(summary.group).set(summary.count)
            oldest = summary.oldest_stored_at
            age = 0.0 if oldest is None else max((now - oldest).total_seconds(), 0.0)
            self.gauges.oldest_age.labels(summary.group).set(age)
