"""Redrives of every matching dead letter, run in the background: at a few letters a second,
a thousand letters take minutes, longer than a browser (or a proxy) waits for an answer.
The operator is sent to the job's page, which follows it to the end.

One runs at a time: two at once would double the rate the consumers are given letters at,
and two over the same letters would give each one back twice. Jobs live in the console's
memory: a restart forgets them (and stops a running one part way; what went back stays
back, the rest stay dead letters, to be redriven again).
"""

from __future__ import annotations

import asyncio
import secrets
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Final, Literal

import structlog

from shop.ops.errors import OpsError

KEPT_JOBS: Final = 50
"""Jobs remembered for their pages: past this, the oldest finished ones are forgotten."""

STOPPED: Final = "the console stopped before the redrive ended"

log = structlog.get_logger(__name__)


@dataclass
class RedriveJob:
    id: str
    description: str
    """What was asked for, in words (``every PermanentError of notification-service``)."""
    started_at: datetime = field(default_factory=lambda: datetime.now(UTC))
    finished_at: datetime | None = None
    redriven: int | None = None
    error: str | None = None

    @property
    def state(self) -> Literal["running", "done", "failed"]:
        if self.finished_at is None:
            return "running"
        return "failed" if self.error is not None else "done"


class AlreadyRunning(Exception):
    def __init__(self, job: RedriveJob) -> None:
        super().__init__(f"a redrive is running already ({job.description})")
        self.job = job


class RedriveJobs:
    def __init__(self) -> None:
        self._jobs: OrderedDict[str, RedriveJob] = OrderedDict()
        self._tasks: dict[str, asyncio.Task[None]] = {}

    @property
    def running(self) -> RedriveJob | None:
        return next((job for job in self._jobs.values() if job.state == "running"), None)

    def start(self, description: str, redrive: Callable[[], Awaitable[int]]) -> RedriveJob:
        """Run ``redrive`` (which answers how many letters went back) in the background.
        Raise :class:`AlreadyRunning` while another redrive runs."""
        if (running := self.running) is not None:
            raise AlreadyRunning(running)
        job = RedriveJob(id=secrets.token_urlsafe(9), description=description)
        self._jobs[job.id] = job
        finished = [key for key, kept in self._jobs.items() if kept.state != "running"]
        for key in finished[: max(0, len(self._jobs) - KEPT_JOBS)]:
            del self._jobs[key]
        task = asyncio.create_task(self._run(job, redrive), name=f"redrive {job.id}")
        self._tasks[job.id] = task
        task.add_done_callback(lambda _: self._tasks.pop(job.id, None))
        return job

    async def wait(self, job: RedriveJob) -> None:
        """Until ``job`` has ended (at once if it has)."""
        task = self._tasks.get(job.id)
        if task is not None:
            await asyncio.wait([task])

    def get(self, job_id: str) -> RedriveJob | None:
        return self._jobs.get(job_id)

    async def close(self) -> None:
        """Stop the running jobs (the console is stopping)."""
        tasks = list(self._tasks.values())
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        for job in self._jobs.values():
            if job.finished_at is None:  # cancelled before it began
                job.error = STOPPED
                job.finished_at = datetime.now(UTC)

    @staticmethod
    async def _run(job: RedriveJob, redrive: Callable[[], Awaitable[int]]) -> None:
        try:
            job.redriven = await redrive()
        except OpsError as error:
            job.error = str(error)
        except asyncio.CancelledError:
            job.error = STOPPED
            raise
        except Exception as error:
            # The job's page says it failed; the log keeps where.
            log.exception("redrive failed", job=job.id)
            job.error = f"unexpected {type(error).__name__} (the console's log has more)"
        finally:
            job.finished_at = datetime.now(UTC)
        log.info("redrive ended", job=job.id, redriven=job.redriven, error=job.error)
