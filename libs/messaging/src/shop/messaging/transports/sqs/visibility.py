"""Keeping a received message hidden while it waits or is handled: its visibility timeout
is pushed forward on a steady cadence, so that SQS does not hand it to another worker."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Final

EXTENSIONS_PER_TIMEOUT: Final = 3
"""A third of the timeout between the starts of two extensions: an endpoint that stalls
for up to two thirds of it (a broker freeze, a slow call) still sees the next extension
before the message shows again."""


async def keep_hidden(extend: Callable[[], Awaitable[None]], visibility: float) -> None:
    """Call ``extend`` (which hides the message for ``visibility`` seconds more) every
    third of ``visibility``, counted from each call's start, never from its end: a slow call
    would otherwise push every later one back by its own length. Runs until cancelled;
    ``extend`` reports its own failures."""
    every = visibility / EXTENSIONS_PER_TIMEOUT
    next_at = time.monotonic() + every
    while True:
        await asyncio.sleep(max(0.0, next_at - time.monotonic()))
        next_at = time.monotonic() + every
        await extend()
