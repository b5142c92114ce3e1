"""SQS's dead-letter store: a consumer's dead letters are the messages of its dead-letter
queue.

SQS cannot browse a queue: listing receives every message (hiding it for the scan) and
then makes them all visible again, so two scans at once hide messages from each other. A
message SQS moved there itself (``RedrivePolicy``) carries no dead-letter keys: what SQS
knows of it stands in for them.
"""

from __future__ import annotations

import asyncio
import builtins
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Final

import structlog

from shop.messaging import headers as h
from shop.messaging.deadletters import StoredDeadLetter, read_dead_letter
from shop.messaging.errors import MessagingError
from shop.messaging.transports.sqs.client import MoveTaskUnavailable, SqsClient
from shop.messaging.transports.sqs.topology import QueueLookup, SqsQueues
from shop.messaging.transports.sqs.wire import SqsMessage

log = structlog.get_logger("shop.messaging")

MOVED_BY_SQS: Final = "MaxReceiveCountExceeded"
"""Error type of a dead letter that SQS moved itself (its worker never settled it)."""
_SCAN_VISIBILITY: Final = 120
"""How long a dead-letter scan hides the messages it has seen, so that it sees each once."""
_SCAN_WAIT: Final = 1
"""A long poll asks every SQS server, so its empty answer means no message is left; a
short poll asks only some of them."""
_MOVE_TASK_POLL: Final = 0.5
"""Seconds between looks at a running message-move task."""


class SqsDeadLetterStore:
    def __init__(self, client: SqsClient, queues_of: QueueLookup) -> None:
        self._client = client
        self._queues_of = queues_of

    async def list(self, group: str) -> list[StoredDeadLetter]:
        queues = await self._queues_of(group)
        messages = await self._scan(queues.dead_letters_url)
        try:
            moved_by_sqs = any(h.DEAD_LETTER_ERROR_TYPE not in m.headers for m in messages)
            max_receive_count = (
                await self._client.max_receive_count(queues.url) if moved_by_sqs else None
            )
        finally:
            await self._client.release(queues.dead_letters_url, messages)
        return [_letter(group, queues, m, max_receive_count) for m in messages]

    async def redrive(self, group: str, letter: StoredDeadLetter) -> None:
        queues = await self._queues_of(group)
        chosen = await self._take(queues, {letter.id})
        if not chosen:
            raise KeyError(
                f"{group} has no dead letter {letter.id!r} (redriven or purged already, "
                "or hidden by another scan)"
            )
        await self._move_back(queues, chosen)

    async def purge(self, group: str, letters: Sequence[StoredDeadLetter]) -> None:
        if not letters:
            return
        queues = await self._queues_of(group)
        wanted = {letter.id for letter in letters}
        doomed = await self._take(queues, wanted)
        refused = await self._client.delete_many(queues.dead_letters_url, doomed)
        if refused:
            raise MessagingError(f"SQS did not delete dead letters {refused} of {group}")
        missing = wanted - {message.message_id for message in doomed}
        if missing:
            raise KeyError(
                f"{group} has no dead letters {sorted(missing)} (purged already, or hidden "
                "by another scan): the others are purged"
            )

    async def redrive_all(self, group: str, *, per_second: float) -> int:
        """Move every dead letter of ``group`` back to its queue, at most ``per_second`` a
        second; how many moved.

        Uses StartMessageMoveTask where the endpoint has it (the messages move unchanged:
        the consumer drops their dead-letter keys), else moves them one by one.
        """
        if per_second <= 0:
            raise ValueError("per_second must be positive")
        queues = await self._queues_of(group)
        moved = await self._move_with_task(queues, per_second)
        if moved is not None:
            return moved
        scanned = await self._scan(queues.dead_letters_url)
        return await self._move_back(queues, scanned, per_second=per_second)

    # -- scanning ---------------------------------------------------------------------

    async def _scan(self, url: str, wanted: set[str] | None = None) -> builtins.list[SqsMessage]:
        """Receive the queue's messages (hidden meanwhile), oldest first: all of them, or
        until every id in ``wanted`` is found. The caller settles or releases each."""
        found: dict[str, SqsMessage] = {}
        try:
            while wanted is None or not wanted <= found.keys():
                batch = await self._client.receive(
                    url, wait=_SCAN_WAIT, visibility=_SCAN_VISIBILITY
                )
                if not batch:
                    break
                # A message received twice: its newest receipt handle is the valid one.
                found.update((message.message_id, message) for message in batch)
        except BaseException:
            await self._client.release(url, list(found.values()))
            raise
        oldest = datetime.min.replace(tzinfo=UTC)
        return sorted(found.values(), key=lambda m: (m.sent_at or oldest, m.message_id))

    async def _take(self, queues: SqsQueues, ids: set[str]) -> builtins.list[SqsMessage]:
        """The messages with these ids, hidden; every other one scanned is released."""
        scanned = await self._scan(queues.dead_letters_url, ids)
        await self._client.release(
            queues.dead_letters_url, [m for m in scanned if m.message_id not in ids]
        )
        return [m for m in scanned if m.message_id in ids]

    # -- moving back ------------------------------------------------------------------

    async def _move_back(
        self,
        queues: SqsQueues,
        messages: Sequence[SqsMessage],
        *,
        per_second: float | None = None,
    ) -> int:
        """Send each message to the consumer's queue, then delete it here; release the
        rest if one fails."""
        moved = 0
        try:
            for message in messages:
                if moved and per_second:
                    await asyncio.sleep(1 / per_second)
                headers = h.original_headers(message.headers)
                headers[h.ORIGIN] = (
                    message.headers.get(h.DEAD_LETTER_SOURCE)
                    or message.headers.get(h.ORIGIN)
                    or queues.name
                )
                await self._client.send(queues.url, message.body, headers, message.key)
                await self._client.delete(queues.dead_letters_url, message)
                moved += 1
        finally:
            await self._client.release(queues.dead_letters_url, messages[moved:])
        return moved

    async def _move_with_task(self, queues: SqsQueues, per_second: float) -> int | None:
        """Move everything with StartMessageMoveTask and wait until done; how many moved,
        or None when the endpoint cannot."""
        try:
            handle = await self._client.start_move_task(
                queues.dead_letters_arn, queues.arn, per_second=per_second
            )
        except MoveTaskUnavailable as unavailable:
            log.info(
                "StartMessageMoveTask unavailable; moving dead letters one by one",
                queue=queues.name,
                error=unavailable.reason,
            )
            return None
        return await self._wait_for_move_task(queues, handle)

    async def _wait_for_move_task(self, queues: SqsQueues, handle: str) -> int:
        while True:
            task = await self._client.latest_move_task(queues.dead_letters_arn)
            if task.handle in (None, handle) and task.status == "COMPLETED":
                return task.moved
            if task.status in {"FAILED", "CANCELLED"}:
                raise MessagingError(
                    f"moving the dead letters of {queues.name} back stopped: {task.failure_reason}"
                )
            await asyncio.sleep(_MOVE_TASK_POLL)


def _letter(
    group: str, queues: SqsQueues, message: SqsMessage, max_receive_count: int | None
) -> StoredDeadLetter:
    stored = dict(message.headers)
    if h.DEAD_LETTER_ERROR_TYPE not in stored:
        stored.update(_moved_by_sqs(group, queues, message, max_receive_count))
    return read_dead_letter(
        message.message_id, message.body.encode("utf-8"), stored, key=message.key
    )


def _moved_by_sqs(
    group: str, queues: SqsQueues, message: SqsMessage, max_receive_count: int | None
) -> dict[str, str]:
    """Dead-letter keys for a message SQS moved itself (RedrivePolicy): no worker ever
    settled it, so nobody wrote why; what SQS knows stands in."""
    metadata = {
        h.DEAD_LETTER_CONSUMER: group,
        h.DEAD_LETTER_SOURCE: message.headers.get(h.ORIGIN) or queues.name,
        h.DEAD_LETTER_ERROR_TYPE: MOVED_BY_SQS,
        h.DEAD_LETTER_ERROR_MESSAGE: (
            "received more often than the queue's maxReceiveCount without being settled "
            "(its handler crashed or outlasted the visibility timeout each time)"
        ),
        h.DEAD_LETTER_ATTEMPTS: str(max_receive_count or 0),
    }
    if message.sent_at is not None:
        # When it was first sent is the best SQS can tell of when its failures began.
        metadata[h.DEAD_LETTER_FIRST_FAILURE_AT] = message.sent_at.isoformat()
        metadata[h.DEAD_LETTER_LAST_FAILURE_AT] = message.sent_at.isoformat()
    return metadata
