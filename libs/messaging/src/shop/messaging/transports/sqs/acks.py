"""Deleting settled messages in ``DeleteMessageBatch`` calls: each SQS call costs a worker
about a millisecond of CPU (signing, building and parsing the request), more than the
pipeline spends on a message, so the deletes of messages settled within a few
milliseconds of each other go together, up to ten a call.

Each caller still awaits its own message's delete and gets its own error (a receipt that
expired, a refusal, a failed call), so a delete is retried and judged exactly as a single
``DeleteMessage`` is.
"""

from __future__ import annotations

import asyncio
from typing import Final

from shop.messaging.transports.sqs.client import BATCH_LIMIT, SqsClient
from shop.messaging.transports.sqs.wire import SqsMessage

LINGER: Final = 0.05
"""Seconds a delete waits for others to go with it. It holds the message's slot that much
longer, never its effects (the handler has finished): a full batch goes at once."""


class BatchedDeletes:
    def __init__(self, client: SqsClient, url: str, *, linger: float = LINGER) -> None:
        self._client = client
        self._url = url
        self._linger = linger
        self._waiting: list[tuple[SqsMessage, asyncio.Future[None]]] = []
        self._timer: asyncio.TimerHandle | None = None
        self._calls: set[asyncio.Task[None]] = set()

    async def delete(self, message: SqsMessage) -> None:
        """Delete ``message`` with whatever else is deleted within the linger."""
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        done.add_done_callback(_retrieved)
        self._waiting.append((message, done))
        if len(self._waiting) >= BATCH_LIMIT:
            self._send()
        elif self._timer is None:
            self._timer = asyncio.get_running_loop().call_later(self._linger, self._send)
        # Shielded: a caller cancelled (a drain that timed out) leaves the call to finish
        # for the others in its batch.
        await asyncio.shield(done)

    def _send(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        while self._waiting:
            batch, self._waiting = self._waiting[:BATCH_LIMIT], self._waiting[BATCH_LIMIT:]
            call = asyncio.create_task(self._call(batch))
            self._calls.add(call)
            call.add_done_callback(self._calls.discard)

    async def _call(self, batch: list[tuple[SqsMessage, asyncio.Future[None]]]) -> None:
        try:
            results = await self._client.delete_each(self._url, [m for m, _ in batch])
        except asyncio.CancelledError:
            for _, done in batch:
                done.cancel()
            raise
        except Exception as error:
            for _, done in batch:
                if not done.done():
                    done.set_exception(error)
            return
        for (_, done), result in zip(batch, results, strict=True):
            if done.done():
                continue
            if result is None:
                done.set_result(None)
            else:
                done.set_exception(result)


def _retrieved(done: asyncio.Future[None]) -> None:
    """Marks the outcome seen: a caller that was cancelled no longer awaits it, and its
    error is its retry's business, not a warning at exit."""
    if not done.cancelled():
        done.exception()
