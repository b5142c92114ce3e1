"""The fault-injecting provider: slow and failing as configured, and never half-sending."""

from __future__ import annotations

import pytest

from shop.notification.adapters.faults import FaultyEmailSender
from shop.notification.ports import Email, EmailUnavailable
from shop.notification.settings import FaultSettings

EMAIL = Email("ayu@example.com", "s", "t", "<p>h</p>", "<1@skincare-shop.example>")


class Provider:
    def __init__(self) -> None:
        self.sent: list[Email] = []

    async def send(self, email: Email) -> None:
        self.sent.append(email)


async def outcomes(settings: FaultSettings, tries: int) -> tuple[int, int, Provider]:
    provider = Provider()
    faulty = FaultyEmailSender(provider, settings)
    failed = 0
    for _ in range(tries):
        try:
            await faulty.send(EMAIL)
        except EmailUnavailable:
            failed += 1
    return failed, len(provider.sent), provider


async def test_the_failure_rate_is_about_what_was_asked_and_a_failure_sends_nothing() -> None:
    settings = FaultSettings(enabled=True, min_latency=0, max_latency=0, failure_rate=0.5, seed=1)

    failed, sent, _ = await outcomes(settings, 400)

    assert 160 <= failed <= 240
    assert failed + sent == 400


async def test_the_same_seed_fails_the_same_sends() -> None:
    settings = FaultSettings(enabled=True, min_latency=0, max_latency=0, failure_rate=0.3, seed=9)

    assert (await outcomes(settings, 50))[:2] == (await outcomes(settings, 50))[:2]


async def test_each_send_first_waits_a_latency_drawn_from_the_range() -> None:
    waits: list[float] = []

    async def sleep(seconds: float) -> None:
        waits.append(seconds)

    settings = FaultSettings(enabled=True, min_latency=0.3, max_latency=3.0, seed=3)
    faulty = FaultyEmailSender(Provider(), settings, sleep=sleep)
    for _ in range(50):
        await faulty.send(EMAIL)

    assert len(waits) == 50
    assert all(0.3 <= wait <= 3.0 for wait in waits)
    assert max(waits) - min(waits) > 1, "latencies are spread over the range"


def test_a_latency_range_upside_down_is_refused() -> None:
    with pytest.raises(ValueError, match="max_latency must be at least min_latency"):
        FaultSettings(min_latency=2, max_latency=1)
