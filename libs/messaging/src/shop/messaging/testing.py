"""Helpers for tests of services that use this library (no fakes: real workers, run in the
background of a test, and polling for what they did)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager

from shop.messaging.worker import Worker


async def eventually(
    check: Callable[[], Awaitable[bool]],
    *,
    within: float = 30.0,
    what: str = "condition",
    interval: float = 0.05,
) -> None:
    """Poll ``check`` until it holds; fail with ``what`` after ``within`` seconds."""
    deadline = time.monotonic() + within
    while not await check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {within} s waiting for {what}")
        await asyncio.sleep(interval)


async def wait_until(
    condition: Callable[[], bool], *, within: float = 30.0, what: str = "condition"
) -> None:
    """:func:`eventually` for a condition that needs no awaiting (a flag, a list's length)."""

    async def check() -> bool:
        return condition()

    await eventually(check, within=within, what=what, interval=0.02)


@asynccontextmanager
async def running(worker: Worker, *, start_within: float = 60.0) -> AsyncIterator[Worker]:
    """Run ``worker`` for the duration of the block, then stop it gracefully."""
    task = asyncio.create_task(worker.run())
    started = asyncio.create_task(worker.started.wait())
    await asyncio.wait({task, started}, timeout=start_within, return_when=asyncio.FIRST_COMPLETED)
    if task.done():
        started.cancel()
        await task  # re-raises why it could not start
        raise AssertionError("worker ended while starting")
    if not started.done():
        started.cancel()
        worker.stop()
        await task
        raise AssertionError(f"worker did not start within {start_within} s")
    try:
        yield worker
    finally:
        worker.stop()
        await task
