"""Redrives of every matching dead letter, run in the background: at a few letters a second,
a thousand letters take minutes, longer than a browser (or a proxy) waits for an answer.
The operator is sent to the job's page, which follows it to the end.

Jobs live in the console's memory: a restart forgets them (and stops a running one part
way; what went back stays back, the rest stay dead letters, to be redriven again).
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
"""Finished jobs remembered, newest first, for their pages."""

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


class RedriveJobs:
    def __init__(self) -> None:
        self._jobs: OrderedDict[str, RedriveJob] = OrderedDict()
        self._tasks: set[asyncio.Task[None]] = set()

    def start(self, description: str, redrive: Callable[[], Awaitable[int]]) -> RedriveJob:
        """Run ``redrive`` (which answers how many letters went back) in the background."""
        job = RedriveJob(id=secrets.token_urlsafe(9), description=description)
        self._jobs[job.id] = job
        while len(self._jobs) > KEPT_JOBS:
            self._jobs.popitem(last=False)
        task = asyncio.create_task(self._run(job, redrive), name=f"redrive {job.id}")
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return job

    def get(self, job_id: str) -> RedriveJob | None:
        return self._jobs.get(job_id)

    async def close(self) -> None:
        """Stop the running jobs (the console is stopping)."""
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    @staticmethod
    async def _run(job: RedriveJob, redrive: Callable[[], Awaitable[int]]) -> None:
        try:
            job.redriven = await redrive()
        except OpsError as error:
            job.error = str(error)
        except asyncio.CancelledError:
            job.error = "the console stopped before the redrive ended"
            raise
        except Exception as error:
            # The job's page says it failed; the log keeps where.
            log.exception("redrive failed", job=job.id)
            job.error = f"unexpected {type(error).__name__} (the console's log has more)"
        finally:
            job.finished_at = datetime.now(UTC)
        log.info("redrive ended", job=job.id, redriven=job.redriven, error=job.error)
