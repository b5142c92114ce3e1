"""Concurrency for consumers: many messages in flight, but one at a time per key.

Messages of one key (one order) run in arrival order; other keys run beside them up to the
in-flight limit. A message waiting for its retry is never here (the transport holds it), so
a failing key never blocks the others.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Hashable

import structlog

log = structlog.get_logger("shop.messaging")

Work = Callable[[], Awaitable[None]]


class KeyedDispatcher:
    def __init__(self, max_in_flight: int) -> None:
        if max_in_flight < 1:
            raise ValueError("max_in_flight must be at least 1")
        self._capacity = asyncio.Semaphore(max_in_flight)
        self._last_of_key: dict[Hashable, asyncio.Task[None]] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self._closed = False

    @property
    def in_flight(self) -> int:
        return len(self._tasks)

    async def submit(self, key: Hashable, work: Work) -> bool:
        """Start ``work`` after the work already submitted for ``key``; waits while the
        dispatcher is full (that is the consumer's back-pressure). False, and ``work`` never
        runs, once :meth:`drain` has begun: a slot that frees up then is not taken again."""
        await self._capacity.acquire()
        if self._closed:
            self._capacity.release()
            return False
        previous = self._last_of_key.get(key)
        task = asyncio.create_task(self._run(key, previous, work))
        self._last_of_key[key] = task
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return True

    async def _run(self, key: Hashable, previous: asyncio.Task[None] | None, work: Work) -> None:
        try:
            if previous is not None:
                await asyncio.wait([previous])
            await work()
        except Exception:
            # The transports settle every outcome themselves; reaching here is a bug, and the
            # message stays unacknowledged, so it is delivered again rather than lost.
            log.exception("consumer work failed", key=str(key))
        finally:
            self._capacity.release()
            if self._last_of_key.get(key) is asyncio.current_task():
                del self._last_of_key[key]

    async def drain(self, grace: float) -> bool:
        """Wait up to ``grace`` s for the work in flight; cancel what is left (it was not
        acknowledged, so the transport delivers it again). True when all finished.
        Nothing submitted from now on runs."""
        self._closed = True
        if not self._tasks:
            return True
        _, pending = await asyncio.wait(set(self._tasks), timeout=grace)
        for task in pending:
            task.cancel()
        if pending:
            await asyncio.wait(pending)
        return not pending
