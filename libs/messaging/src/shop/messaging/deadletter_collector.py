"""Collecting dead letters: each consumer's dead letters move from the broker that carried
them (its dead-letter topic or queue) into the service's store, where they are kept.

A batch is taken off the broker only once the store has it (the courier's ``fetched``);
collected twice (a crash in between, two replicas), it is kept once. A letter whose
dead-letter keys cannot be read is kept all the same, marked with what was wrong."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Sequence
from dataclasses import replace
from typing import Final

import structlog

from shop.messaging.deadletters import (
    Arrival,
    DeadLetterCourier,
    DeadLetterStore,
    StoredDeadLetter,
)

log = structlog.get_logger("shop.messaging.deadletters")

BATCH: Final = 100
"""Dead letters fetched and kept at a time: bounded memory (records of up to 1 MiB)."""


class DeadLetterCollector:
    def __init__(
        self,
        courier: DeadLetterCourier,
        store: DeadLetterStore,
        groups: Sequence[str],
        *,
        interval: float,
    ) -> None:
        """Collect the dead letters of ``groups``; when none wait, look again after
        ``interval`` s."""
        if interval <= 0:
            raise ValueError("interval must be positive")
        self.courier = courier
        self.store = store
        self.groups = tuple(groups)
        self.interval = interval

    async def run(self, stopping: asyncio.Event) -> None:
        """Until ``stopping`` is set (a worker's job). A failure of the broker or of the
        store costs one look, never the worker: the letters stay on the broker, and the
        next look takes them."""
        while not stopping.is_set():
            collected = 0
            for group in self.groups:
                try:
                    collected += await self.collect(group)
                except Exception as error:
                    # An outage of the broker or of the database, most likely: the letters
                    # wait on the broker meanwhile. The traceback goes with it, so that a
                    # fault of the code is not mistaken for one.
                    log.warning(
                        "could not collect dead letters; trying again",
                        group=group,
                        error=repr(error),
                        retry_in=self.interval,
                        exc_info=True,
                    )
            if collected == 0:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stopping.wait(), self.interval)

    async def collect(self, group: str) -> int:
        """One batch of ``group``'s dead letters into the store; how many were fetched."""
        arrivals = await self.courier.fetch(group, BATCH)
        if not arrivals:
            return 0
        try:
            new = await self.store.keep([_of(group, arrival) for arrival in arrivals])
        except BaseException:
            await self.courier.unfetched(group, arrivals)
            raise
        await self.courier.fetched(group, arrivals)
        if new:
            log.info("dead letters kept", group=group, kept=new)
        return len(arrivals)


def _of(group: str, arrival: Arrival) -> StoredDeadLetter:
    """The letter as its group's: it came from that group's dead-letter place, whatever
    its consumer key says (a foreign or damaged record says so in its problems)."""
    letter = arrival.letter
    if letter.group == group:
        return letter
    said = f"x-dead-letter-consumer={letter.group!r}" if letter.group else "no consumer key"
    return replace(
        letter, group=group, problems=(*letter.problems, f"{said} on {group}'s dead letters")
    )
