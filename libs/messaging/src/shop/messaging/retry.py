"""When to try a failed message again, and when to give up."""

from __future__ import annotations

import dataclasses
import random
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the subscribers carry their policies: imported the other way at run time
    from shop.messaging.subscriber import Router

DEFAULT_MAX_ATTEMPTS = 5
DEFAULT_BASE_DELAY = 2.0
DEFAULT_MAX_DELAY = 300.0
DEFAULT_OUTAGE_ATTEMPTS = 15
"""Tries in place while what a handler needs is away: 2, 4, 8, then 16 s apart, some three
and a half minutes of a database restarting or failing over. A message waits them out
holding its slot, so they stay well within Kafka's max.poll.interval (5 min): with every
slot held, the consumer stops polling."""
OUTAGE_MAX_DELAY = 16.0
"""The longest wait in place between two tries that met an outage."""
JITTER = 0.2
"""Each delay is spread by up to ±20% so that messages failed together do not all come
back in the same instant; small enough that delays still grow from one attempt to the next."""


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """``min(base * 2**(attempt-1), cap)`` seconds after failed attempt ``attempt`` (2 s,
    4 s, 8 s, … 5 min), with jitter, until ``max_attempts`` tries have failed.

    ``time_scale`` multiplies every delay: tests shrink them (0.01 turns 2 s into 20 ms)
    without changing the shape of the schedule.

    A failure that says something the handler needs is away (the database down: an
    outage, not the message's fault) does not spend the message's attempts: the handler
    is tried again in place, at the schedule's delays (16 s at most), up to
    ``outage_attempts`` tries; an outage that outlasts them spends one attempt.
    """

    max_attempts: int = DEFAULT_MAX_ATTEMPTS
    base_delay: float = DEFAULT_BASE_DELAY
    max_delay: float = DEFAULT_MAX_DELAY
    time_scale: float = 1.0
    outage_attempts: int = DEFAULT_OUTAGE_ATTEMPTS

    def __post_init__(self) -> None:
        if self.max_attempts < 1:
            raise ValueError("max_attempts must be at least 1")
        if self.base_delay <= 0 or self.max_delay < self.base_delay:
            raise ValueError("base_delay must be positive and at most max_delay")
        if self.time_scale <= 0:
            raise ValueError("time_scale must be positive")
        if self.outage_attempts < 1:
            raise ValueError("outage_attempts must be at least 1")

    def gives_up_after(self, attempt: int) -> bool:
        """True when failed attempt number ``attempt`` was the last one allowed."""
        return attempt >= self.max_attempts

    def outage_delay(self, tries: int) -> float:
        """Seconds to wait in place after ``tries`` tries met an outage: the schedule's
        own delays, held at :data:`OUTAGE_MAX_DELAY` at most."""
        return min(self.delay(tries), OUTAGE_MAX_DELAY * self.time_scale)

    def nominal_delay(self, attempt: int) -> float:
        """The unscaled, unjittered delay after failed attempt ``attempt`` (1-based).

        Kafka names its delay topics after these values.
        """
        exponent = min(attempt - 1, 30)  # 2**30 s is far past any cap; avoids huge floats
        return min(self.base_delay * 2.0**exponent, self.max_delay)

    def delay(self, attempt: int, *, rng: random.Random | None = None) -> float:
        """Seconds to wait before the next try, after failed attempt ``attempt``."""
        spread = (rng or random).uniform(1 - JITTER, 1 + JITTER)
        return self.nominal_delay(attempt) * spread * self.time_scale

    def nominal_delays(self) -> list[float]:
        """Every distinct nominal delay this policy can ask for, shortest first."""
        return sorted({self.nominal_delay(attempt) for attempt in range(1, self.max_attempts)})


def scaled_policies(router: Router, time_scale: float) -> dict[str, RetryPolicy]:
    """Each subscriber's policy by message type, its delays multiplied by ``time_scale``."""
    return {s.message_type: dataclasses.replace(s.retry, time_scale=time_scale) for s in router}
