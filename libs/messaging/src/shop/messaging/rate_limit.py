"""How fast the shop calls a provider: a token bucket per provider, in each process.

The limit is divided among replicas, not shared: each process keeps its own bucket, so a
provider that takes N calls a second is given N / replicas in each replica's settings. A
shared bucket would need a store every replica reaches on every call (Redis, say), which
the shop does not run; a divided one costs nothing and can only undershoot when replicas
are idle."""

from __future__ import annotations

import asyncio
import time


class TokenBucket:
    """``rate`` calls a second with a burst of one: calls are spaced at least ``1 / rate``
    apart, in the order they asked (the lock is fair)."""

    def __init__(self, rate: float) -> None:
        if rate <= 0:
            raise ValueError(f"a rate limit must be positive, not {rate}")
        self.rate = rate
        self._next_at = 0.0
        self._lock = asyncio.Lock()

    async def take(self) -> None:
        """Return when the next call may go."""
        async with self._lock:
            now = time.monotonic()
            wait = self._next_at - now
            if wait > 0:
                await asyncio.sleep(wait)
                now = self._next_at
            self._next_at = now + 1 / self.rate
