"""The benchmarks' open loop, with a stand-in for the server: requests leave on schedule
whatever the answers do, latencies count from when a request was due, and what could not
leave on time is counted."""

from __future__ import annotations

import asyncio
import time

import pytest

from shop.devstack.open_loop import open_loop


async def test_a_slow_answer_holds_back_none_of_the_requests_due_after_it() -> None:
    sent_at: list[float] = []

    async def send() -> None:
        sent_at.append(time.perf_counter())
        if len(sent_at) == 1:
            await asyncio.sleep(0.3)  # the first answer stalls; the schedule goes on

    figures = await open_loop(send, rate=50, seconds=0.2)

    assert figures.due == 10
    assert len(figures.latencies_ms) == 10
    assert sent_at[-1] - sent_at[0] < 0.25, "the last left on schedule, not after the stall"
    assert max(figures.latencies_ms) >= 300, "the stalled one counts its whole wait"
    assert (figures.not_sent, dict(figures.failed)) == (0, {})


async def test_latency_counts_from_when_the_request_was_due_not_from_when_it_left() -> None:
    async def send() -> None:
        time.sleep(0.05)  # noqa: ASYNC251 - the client itself stalls, as on a busy machine

    figures = await open_loop(send, rate=100, seconds=0.1)

    assert figures.due == 10
    # Each stalled the loop in turn: the n-th left about n * 50 ms after it was due.
    assert figures.late >= 8
    assert max(figures.latencies_ms) >= 9 * 50 - 9 * 10


async def test_requests_due_while_every_connection_waits_are_counted_not_sent() -> None:
    async def send() -> None:
        await asyncio.sleep(0.5)

    figures = await open_loop(send, rate=100, seconds=0.1, connections=2)

    assert (figures.due, len(figures.latencies_ms), figures.not_sent) == (10, 2, 8)


async def test_failed_answers_and_errors_are_counted_by_what_went_wrong() -> None:
    calls = 0

    async def send() -> str | None:
        nonlocal calls
        calls += 1
        if calls % 3 == 0:
            raise ConnectionResetError("reset by peer")
        return "503 busy" if calls % 3 == 2 else None

    figures = await open_loop(send, rate=200, seconds=0.03)

    assert figures.due == 6
    assert len(figures.latencies_ms) == 2
    assert figures.failed == {"503 busy": 2, "ConnectionResetError: reset by peer": 2}
    assert figures.answered_per_second == pytest.approx(2 / 0.03)


async def test_runs_at_one_rate_add_up() -> None:
    async def send() -> None:
        return None

    first = await open_loop(send, rate=100, seconds=0.05)
    first.add(await open_loop(send, rate=100, seconds=0.05))

    assert (first.due, len(first.latencies_ms), first.seconds) == (10, 10, pytest.approx(0.1))
