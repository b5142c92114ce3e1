"""The login throttle: counts failures per client inside a sliding window."""

from __future__ import annotations

import pytest

from shop.console.domain.throttle import MAX_CLIENTS, LoginThrottle


class Clock:
    def __init__(self) -> None:
        self.now = 1_000.0

    def __call__(self) -> float:
        return self.now


def test_a_client_waits_until_its_oldest_failure_leaves_the_window() -> None:
    clock = Clock()
    throttle = LoginThrottle(max_failures=3, window=60, clock=clock)
    for _ in range(3):
        assert throttle.wait_before_next_try("10.0.0.1") == 0
        throttle.failed("10.0.0.1")
        clock.now += 10

    assert throttle.wait_before_next_try("10.0.0.1") == 30  # the first failure, at 1000
    assert throttle.wait_before_next_try("10.0.0.2") == 0  # others are not affected
    clock.now += 30
    assert throttle.wait_before_next_try("10.0.0.1") == 0


def test_success_clears_a_clients_failures() -> None:
    throttle = LoginThrottle(max_failures=2, window=60, clock=Clock())
    throttle.failed("a")
    throttle.succeeded("a")
    throttle.failed("a")
    assert throttle.wait_before_next_try("a") == 0


def test_memory_is_bounded_by_forgetting_the_least_recent_client() -> None:
    throttle = LoginThrottle(max_failures=1, window=60, clock=Clock())
    throttle.failed("first")
    for n in range(MAX_CLIENTS):
        throttle.failed(f"client-{n}")
    assert throttle.wait_before_next_try("first") == 0
    assert throttle.wait_before_next_try(f"client-{MAX_CLIENTS - 1}") > 0


@pytest.mark.parametrize(("max_failures", "window"), [(0, 60), (3, 0)])
def test_a_throttle_that_could_never_let_anyone_in_is_refused(
    max_failures: int, window: float
) -> None:
    with pytest.raises(ValueError, match="max_failures"):
        LoginThrottle(max_failures=max_failures, window=window)
