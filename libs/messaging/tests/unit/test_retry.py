from __future__ import annotations

import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from shop.messaging.retry import JITTER, RetryPolicy


def test_nominal_delays_double_from_two_seconds_up_to_five_minutes() -> None:
    policy = RetryPolicy(max_attempts=12)
    assert [policy.nominal_delay(a) for a in range(1, 11)] == [
        2, 4, 8, 16, 32, 64, 128, 256, 300, 300,
    ]  # fmt: skip
    assert policy.nominal_delays() == [2, 4, 8, 16, 32, 64, 128, 256, 300]


def test_gives_up_after_the_last_allowed_attempt() -> None:
    policy = RetryPolicy(max_attempts=3)
    assert [policy.gives_up_after(a) for a in (1, 2, 3, 4)] == [False, False, True, True]


def test_time_scale_shrinks_every_delay() -> None:
    policy = RetryPolicy(time_scale=0.01)
    assert policy.delay(1, rng=random.Random(7)) == pytest.approx(
        RetryPolicy().delay(1, rng=random.Random(7)) * 0.01
    )


@given(attempt=st.integers(min_value=1, max_value=1000), seed=st.integers())
def test_jittered_delay_stays_within_its_band(attempt: int, seed: int) -> None:
    policy = RetryPolicy()
    delay = policy.delay(attempt, rng=random.Random(seed))
    nominal = policy.nominal_delay(attempt)
    assert nominal * (1 - JITTER) <= delay <= nominal * (1 + JITTER)


@given(attempt=st.integers(min_value=1, max_value=7), seed=st.integers())
def test_jitter_never_reorders_consecutive_delays(attempt: int, seed: int) -> None:
    rng = random.Random(seed)
    policy = RetryPolicy()
    assert policy.delay(attempt, rng=rng) < policy.delay(attempt + 1, rng=rng)


@pytest.mark.parametrize(
    "kwargs",
    [{"max_attempts": 0}, {"base_delay": 0}, {"max_delay": 1}, {"time_scale": 0}],
)
def test_nonsense_policies_are_refused(kwargs: dict[str, float]) -> None:
    with pytest.raises(ValueError, match="must"):
        RetryPolicy(**kwargs)  # type: ignore[arg-type]
