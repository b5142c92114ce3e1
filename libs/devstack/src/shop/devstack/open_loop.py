"""An open loop for the benchmarks: requests sent on a fixed schedule (evenly spaced, at an
offered rate) whatever the answers do, so that a slow answer cannot hold back the requests
behind it and hide them from the figures (coordinated omission). Each latency counts from
the moment its request was due, not from when it left; what could not leave on time is
counted, never left out silently:

- *not sent*: due while ``connections`` requests were already waiting for their answers (the
  client had no connection to send it on); it is skipped, not sent late;
- *late*: sent, but more than ``late_ms`` after it was due (the client itself fell behind,
  a busy machine); its latency still counts from when it was due.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

Send = Callable[[], Awaitable[str | None]]
"""Send one request and wait for its answer: None when it was answered as hoped, otherwise
what went wrong, in a few words (a status and the start of the body, say)."""

START_DELAY = 0.1
"""Between the call and the first request being due: time to set up."""


@dataclass
class OpenLoopFigures:
    rate: float
    """Offered, requests per second."""
    seconds: float
    """How long requests were due."""
    due: int = 0
    latencies_ms: list[float] = field(default_factory=list)
    """Of the requests answered as hoped, each from the moment it was due."""
    failed: Counter[str] = field(default_factory=Counter)
    """Requests answered otherwise, or not at all, by what went wrong."""
    not_sent: int = 0
    late: int = 0

    @property
    def answered_per_second(self) -> float:
        return len(self.latencies_ms) / self.seconds if self.seconds else 0.0

    def percentile(self, fraction: float) -> float:
        """Of the latencies (ms), by nearest rank; NaN when there are none."""
        ordered = sorted(self.latencies_ms)
        if not ordered:
            return float("nan")
        return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]

    def add(self, other: OpenLoopFigures) -> None:
        """Count ``other`` (another run at the same rate) in with these."""
        self.seconds += other.seconds
        self.due += other.due
        self.latencies_ms += other.latencies_ms
        self.failed += other.failed
        self.not_sent += other.not_sent
        self.late += other.late


async def open_loop(
    send: Send,
    *,
    rate: float,
    seconds: float,
    connections: int | None = None,
    late_ms: float = 5.0,
) -> OpenLoopFigures:
    """Call ``send`` ``rate`` times a second, evenly spaced, for ``seconds``, with at most
    ``connections`` requests waiting for answers at once (None: no limit); returns when the
    last one is answered."""
    if rate <= 0 or seconds <= 0:
        raise ValueError("an open loop needs a positive rate and duration")
    figures = OpenLoopFigures(rate=rate, seconds=seconds)
    waiting: set[asyncio.Task[None]] = set()

    async def one(due: float) -> None:
        try:
            failure = await send()
        except Exception as error:  # counted, never fatal: the schedule goes on
            failure = f"{type(error).__name__}: {error}"[:120]
        if failure is None:
            figures.latencies_ms.append((time.perf_counter() - due) * 1000)
        else:
            figures.failed[failure] += 1

    start = time.perf_counter() + START_DELAY
    for n in range(round(rate * seconds)):
        due = start + n / rate
        figures.due += 1
        delay = due - time.perf_counter()
        if delay > 0:
            await asyncio.sleep(delay)
        if connections is not None and len(waiting) >= connections:
            figures.not_sent += 1
            continue
        if (time.perf_counter() - due) * 1000 > late_ms:
            figures.late += 1
        task = asyncio.create_task(one(due))
        waiting.add(task)
        task.add_done_callback(waiting.discard)
    if waiting:
        await asyncio.gather(*list(waiting))
    return figures
