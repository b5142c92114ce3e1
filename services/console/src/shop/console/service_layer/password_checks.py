"""At most a few password checks at once, on threads of their own.

A check is memory-hard on purpose (argon2id: about 19 MiB and tens of milliseconds), so a
flood of logins, from however many addresses, must not run as many checks as it sends: the
checks take one of ``limit`` slots, and a try that finds none free is refused at once (the
login answers 503 with ``Retry-After``) instead of waiting in a queue that would grow with
the flood. They run on an executor of their own, as many threads as slots, so that they never
take the default executor's threads from the rest of the console.

A slot is given back when its check ends on its thread, not when the request that asked for
it goes away: a client that disconnects mid-check cannot start another check beside the one
still running.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, TypeVar

T = TypeVar("T")


class PasswordChecks:
    def __init__(self, limit: int) -> None:
        if limit < 1:
            raise ValueError("password checks need at least one slot")
        self.limit = limit
        self._slots = threading.BoundedSemaphore(limit)
        self._threads = ThreadPoolExecutor(max_workers=limit, thread_name_prefix="password-check")

    def try_start(self, check: Callable[[], T]) -> asyncio.Future[T] | None:
        """``check`` started on a free slot, to be awaited; None at once when every slot is
        taken. Called on the event loop."""
        if not self._slots.acquire(blocking=False):
            return None
        try:
            started = self._threads.submit(check)
        except BaseException:
            self._slots.release()
            raise
        started.add_done_callback(self._give_back)
        return asyncio.wrap_future(started)

    def _give_back(self, _: Future[Any]) -> None:
        self._slots.release()

    def close(self) -> None:
        """Stop taking checks; those not started are cancelled (their slots given back)."""
        self._threads.shutdown(wait=False, cancel_futures=True)
