"""The password checks' slots: never more checks at once than slots, a try beyond them
refused at once rather than queued, and a slot held until its check really ends."""

from __future__ import annotations

import asyncio
import threading

from shop.console.service_layer.password_checks import PasswordChecks
from shop.messaging.testing import wait_until

WITHIN = 30.0
"""Seconds a test waits for threads to reach a point: a bound for a broken test, not a
measure."""


class HeldChecks:
    """Checks that wait until the test lets them end, counting how many run at once."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self._lock = threading.Lock()
        self.running = 0
        self.most_at_once = 0
        self.ended = 0

    def check(self) -> bool:
        with self._lock:
            self.running += 1
            self.most_at_once = max(self.most_at_once, self.running)
        self.release.wait(WITHIN)
        with self._lock:
            self.running -= 1
            self.ended += 1
        return True


async def test_a_flood_of_tries_runs_no_more_checks_at_once_than_there_are_slots() -> None:
    checks = PasswordChecks(limit=3)
    held = HeldChecks()

    started = [checks.try_start(held.check) for _ in range(50)]
    await wait_until(lambda: held.running == 3, what="three checks running")
    held.release.set()
    results = await asyncio.gather(*(pending for pending in started if pending is not None))

    assert started.count(None) == 47
    assert results == [True, True, True]
    assert held.most_at_once == 3
    checks.close()


async def test_a_slot_is_free_again_once_its_check_has_ended() -> None:
    checks = PasswordChecks(limit=1)
    held = HeldChecks()
    held.release.set()

    first = checks.try_start(held.check)
    assert first is not None
    assert await first

    second = checks.try_start(held.check)
    assert second is not None
    assert await second
    checks.close()


async def test_a_check_whose_caller_went_away_keeps_its_slot_until_it_ends() -> None:
    checks = PasswordChecks(limit=1)
    held = HeldChecks()
    abandoned = checks.try_start(held.check)
    assert abandoned is not None
    await wait_until(lambda: held.running == 1, what="the check running")

    abandoned.cancel()  # as when the client disconnects mid-check

    assert checks.try_start(held.check) is None
    held.release.set()
    await wait_until(lambda: held.ended == 1, what="the abandoned check ended")
    await wait_until(lambda: checks.try_start(lambda: True) is not None, what="its slot given back")
    checks.close()
