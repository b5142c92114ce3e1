"""Background redrives: one at a time, finished ones forgotten first."""

from __future__ import annotations

import asyncio

import pytest

from shop.console.service_layer import redrives
from shop.console.service_layer.redrives import AlreadyRunning, RedriveJobs


async def test_a_second_redrive_is_refused_while_one_runs_and_allowed_after() -> None:
    jobs = RedriveJobs()
    release = asyncio.Event()

    async def slow() -> int:
        await release.wait()
        return 3

    first = jobs.start("every dead letter", slow)
    with pytest.raises(AlreadyRunning) as refused:
        jobs.start("every dead letter", slow)
    assert refused.value.job is first
    release.set()
    await jobs.wait(first)
    assert (first.state, first.redriven) == ("done", 3)
    assert jobs.start("again", slow).id != first.id
    await jobs.close()


async def test_only_finished_jobs_are_forgotten(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(redrives, "KEPT_JOBS", 2)
    jobs = RedriveJobs()

    async def quick() -> int:
        return 1

    done = []
    for n in range(2):
        done.append(jobs.start(f"job {n}", quick))
        await jobs.wait(done[-1])
    release = asyncio.Event()

    async def slow() -> int:
        await release.wait()
        return 0

    running = jobs.start("the running one", slow)
    assert jobs.get(running.id) is running
    assert jobs.get(done[0].id) is None
    assert jobs.get(done[1].id) is done[1]
    await jobs.close()
    assert running.state == "failed"
    assert running.error == "the console stopped before the redrive ended"
