"""How fast the shop calls a provider: a token bucket per provider, in each process.

The limit is divided among replicas, not shared: each process keeps its own bucket, so a
provider that takes N calls a second is given N / replicas in each replica's settings. A
shared bucket would need a store every replica reaches on every call (Redis, say), which
the shop does not run; a divided one costs nothing and can only undershoot when replicas
are idle.

A provider that says the shop is too fast (a 429, an SMTP 4.7.0) knows its quota better
than the settings: the rate drops by 30% at each such refusal, down to a sixteenth of the
limit, and climbs back 2% with each call the provider takes, up to the limit. Near a
quota below the limit it settles into a saw-tooth whose peaks touch the quota: some 20
calls between refusals, at about 85% of the quota on average."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Final

SLOWEST: Final = 1 / 16
"""The lowest rate refusals bring the bucket to, as a share of its limit."""
SLOW_DOWN: Final = 0.7
"""The rate after a refusal, as a share of the rate before it."""
CLIMB: Final = 1.02
"""The rate after a call the provider took, as a multiple of the rate before it: a share
of the rate, and not of the limit, so that the climb does not depend on how far above
the quota the limit was set."""


class TokenBucket:
    """``rate`` calls a second with a burst of one: calls are spaced at least ``1 / rate``
    apart, in the order they asked (the lock is fair)."""

    def __init__(self, rate: float, *, on_change: Callable[[float], None] | None = None) -> None:
        """``on_change``: told the rate at the start and at each change (the metrics)."""
        if rate <= 0:
            raise ValueError(f"a rate limit must be positive, not {rate}")
        self._on_change = on_change
        self.limit = rate
        """The rate the settings give: the most it climbs back to."""
        self.rate = rate
        """The rate now."""
        self.floor = rate * SLOWEST
        self._next_at = 0.0
        self._lock = asyncio.Lock()
        self._changed()

    async def take(self) -> None:
        """Return when the next call may go."""
        async with self._lock:
            now = time.monotonic()
            wait = self._next_at - now
            if wait > 0:
                await asyncio.sleep(wait)
                now = self._next_at
            self._next_at = now + 1 / self.rate

    def slow_down(self) -> bool:
        """Slow down (the provider said too fast); False when at the floor already,
        slowing down having failed to help."""
        if self.rate <= self.floor:
            return False
        self.rate = max(self.rate * SLOW_DOWN, self.floor)
        self._changed()
        return True

    def speed_up(self) -> None:
        """The provider took a call: a step back towards the limit."""
        if self.rate < self.limit:
            self.rate = min(self.rate * CLIMB, self.limit)
            self._changed()

    def _changed(self) -> None:
        if self._on_change is not None:
            self._on_change(self.rate)
