"""Failed logins, counted per client address: after ``max_failures`` inside ``window``
seconds, that address must wait until its oldest failure leaves the window. One password
check costs the console tens of milliseconds and about 19 MiB; without a limit, a script could
try passwords as fast as the console can hash them.

The count is by address alone, whatever user names the tries give: counted by address and
name together, each new name would buy fresh tries. The console has one account, so a count
by name as well would add nothing, and a count by name alone would let anyone, from anywhere,
lock the operators out by failing on purpose. The price: operators behind one address (a
port-forward) share its count. Counted in the process's memory: the console runs one replica,
and a restart forgetting the counts costs an attacker a restart per window.
"""

from __future__ import annotations

import math
import time
from collections import OrderedDict, deque
from collections.abc import Callable
from typing import Final

MAX_CLIENTS: Final = 10_000
"""Clients remembered at most; past this, the one that failed least recently is forgotten,
so that addresses that never come back cannot fill the memory."""


class LoginThrottle:
    """Failures by client (the login gives its address)."""

    def __init__(
        self,
        *,
        max_failures: int,
        window: float,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if max_failures < 1 or window <= 0:
            raise ValueError("a throttle needs max_failures >= 1 and a window > 0 seconds")
        self.max_failures = max_failures
        self.window = window
        self._clock = clock
        self._failures: OrderedDict[str, deque[float]] = OrderedDict()

    def wait_before_next_try(self, client: str) -> int:
        """Whole seconds ``client`` must wait before trying again; 0 when it may try now."""
        failures = self._recent(client)
        if len(failures) < self.max_failures:
            return 0
        return max(1, math.ceil(failures[0] + self.window - self._clock()))

    def failed(self, client: str) -> None:
        failures = self._recent(client)
        failures.append(self._clock())
        while len(failures) > self.max_failures:
            failures.popleft()
        self._failures[client] = failures
        self._failures.move_to_end(client)
        while len(self._failures) > MAX_CLIENTS:
            self._failures.popitem(last=False)

    def succeeded(self, client: str) -> None:
        self._failures.pop(client, None)

    def _recent(self, client: str) -> deque[float]:
        failures = self._failures.get(client, deque())
        since = self._clock() - self.window
        while failures and failures[0] <= since:
            failures.popleft()
        return failures
