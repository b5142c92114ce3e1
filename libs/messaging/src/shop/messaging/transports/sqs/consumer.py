"""The SQS consume loop of one consumer: long polls of its queue, many messages in flight
and one at a time per key, each kept hidden while it waits or is handled.

A retry is ``ChangeMessageVisibility``: the failed message stays in its queue, hidden for
the retry delay, and its ``ApproximateReceiveCount`` is the attempt number. A message given
up on is sent to the dead-letter queue (a prefix of it, with its size and digest, when it is
too large for the queue), then deleted. An outcome that cannot be written within the
outcome timeout stops the consumer, and the worker with it.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Final

import structlog

from shop.messaging.deadletters import dead_letter_headers
from shop.messaging.dispatch import KeyedDispatcher
from shop.messaging.message import Delivery
from shop.messaging.outcome import Ack, DeadLetter, Outcome, Retry
from shop.messaging.pipeline import Pipeline
from shop.messaging.settings import SqsSettings
from shop.messaging.settling import write_dead_letter, write_until_done
from shop.messaging.transports.base import ConsumerLifecycle, ConsumerOptions
from shop.messaging.transports.sqs.acks import BatchedDeletes
from shop.messaging.transports.sqs.client import ReceiptExpired, SqsClient, transient
from shop.messaging.transports.sqs.topology import QueueLookup, SqsQueues
from shop.messaging.transports.sqs.visibility import keep_hidden
from shop.messaging.transports.sqs.wire import SqsMessage, delivery_of

log = structlog.get_logger("shop.messaging")

_MAX_VISIBILITY: Final = 43_200
"""The longest SQS hides a message: a longer retry delay is cut to it."""
_RECEIVE_BACKOFF: Final = 1.0
"""Seconds a receive loop waits after a failed receive before it asks again."""


@dataclass(eq=False, slots=True)
class _Held:
    """A received message this consumer has not settled yet, kept hidden meanwhile."""

    message: SqsMessage
    delivery: Delivery
    keeper: asyncio.Task[None]


def _retry_visibility(delay: float) -> int:
    return min(max(round(delay), 0), _MAX_VISIBILITY)


class SqsConsumer(ConsumerLifecycle):
    def __init__(
        self,
        client: SqsClient,
        settings: SqsSettings,
        queues_of: QueueLookup,
        pipeline: Pipeline,
        options: ConsumerOptions,
    ) -> None:
        super().__init__()
        self._client = client
        self._settings = settings
        self._queues_of = queues_of
        self._pipeline = pipeline
        self._group = pipeline.group
        self._options = options
        self._held: set[_Held] = set()
        self._queues: SqsQueues | None = None
        self._deletes: BatchedDeletes | None = None
        self._failure: BaseException | None = None

    async def run(self) -> None:
        queues = self._queues = await self._queues_of(self._group)
        self._deletes = BatchedDeletes(self._client, queues.url)
        dispatcher = KeyedDispatcher(self._options.max_in_flight)
        self._running = True
        try:
            async with asyncio.TaskGroup() as loops:
                for _ in range(self._settings.receive_concurrency):
                    loops.create_task(self._receive_loop(queues, dispatcher))
        finally:
            self._running = False
            await dispatcher.drain(self._options.drain_timeout)
            # What is still held was not settled: it need not wait out its timeout.
            await self._let_go(queues, list(self._held))
        if self._failure is not None:
            raise self._failure

    # -- receiving --------------------------------------------------------------------

    async def _receive_loop(self, queues: SqsQueues, dispatcher: KeyedDispatcher) -> None:
        # A long poll in progress when stop() comes is let return; no new one starts.
        while not self._stopping.is_set():
            try:
                batch = await self._client.receive(
                    queues.url,
                    wait=self._settings.wait_time_seconds,
                    visibility=self._settings.visibility_timeout,
                )
            except Exception:
                log.exception("receiving from SQS failed; trying again", queue=queues.name)
                await self._pause(_RECEIVE_BACKOFF)
                continue
            held = [self._hold(queues, message) for message in batch]
            await self._hand_over(queues, held, dispatcher)

    async def _pause(self, seconds: float) -> None:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._stopping.wait(), seconds)

    def _hold(self, queues: SqsQueues, message: SqsMessage) -> _Held:
        held = _Held(
            message=message,
            delivery=delivery_of(message, queues.name),
            keeper=asyncio.create_task(self._keep_hidden(queues, message)),
        )
        self._held.add(held)
        return held

    async def _hand_over(
        self, queues: SqsQueues, batch: list[_Held], dispatcher: KeyedDispatcher
    ) -> None:
        for index, held in enumerate(batch):
            if self._stopping.is_set() or not await self._submit(queues, held, dispatcher):
                # Received but not started: back to the queue at once, for another worker.
                await self._let_go(queues, batch[index:])
                return

    async def _submit(self, queues: SqsQueues, held: _Held, dispatcher: KeyedDispatcher) -> bool:
        """Give ``held`` to the dispatcher (which waits while it is full); False when
        stop() or the drain came first."""
        key = (queues.name, held.delivery.key)
        submitting = asyncio.create_task(
            dispatcher.submit(key, functools.partial(self._handle, held))
        )
        stopping = asyncio.create_task(self._stopping.wait())
        try:
            await asyncio.wait({submitting, stopping}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            stopping.cancel()
            if not submitting.done():
                submitting.cancel()
        await asyncio.wait({submitting})
        return not submitting.cancelled() and submitting.result()

    # -- keeping received messages hidden ---------------------------------------------

    async def _keep_hidden(self, queues: SqsQueues, message: SqsMessage) -> None:
        """Push the visibility timeout forward while the message waits or is handled, so
        that SQS does not hand it to another worker meanwhile."""
        timeout = self._settings.visibility_timeout

        async def extend() -> None:
            try:
                await self._client.change_visibility(queues.url, message, timeout)
            except Exception:
                log.warning(
                    "could not extend visibility; the message may be handled twice",
                    queue=queues.name,
                    message_id=message.message_id,
                    exc_info=True,
                )

        await keep_hidden(extend, timeout)

    async def _stop_keeping(self, held: _Held) -> None:
        self._held.discard(held)
        held.keeper.cancel()
        # Wait for it, so that a late extension cannot undo the visibility set next.
        await asyncio.wait({held.keeper})

    async def _let_go(self, queues: SqsQueues, batch: Sequence[_Held]) -> None:
        """Make unsettled messages visible again at once, for another worker."""
        for held in batch:
            await self._stop_keeping(held)
        try:
            await self._client.release(queues.url, [held.message for held in batch])
        except Exception:
            log.exception(
                "could not release unsettled messages; they return after their timeout",
                queue=queues.name,
            )

    # -- handling and settling --------------------------------------------------------

    async def _handle(self, held: _Held) -> None:
        # Cancellation (drain timeout) leaves the message held: it is released afterwards.
        if self._failure is not None:
            return  # stopping on a failure: released at the end, for another worker
        outcome = await self._pipeline.process(held.delivery)
        try:
            await self._settle(held, outcome)
        except ReceiptExpired as error:
            # Its visibility ran out (a handler slower than the keeper could cover): SQS
            # has given it to a receiver again, whose outcome counts; nothing to stop for.
            log.warning(
                "a message's receipt expired before it was settled; it is delivered again",
                group=self._group,
                message_id=held.message.message_id,
                error=repr(error),
            )
        except Exception as error:
            # Not deleted, so SQS delivers it again when its visibility timeout ends; but a
            # consumer that cannot settle would only take message after message it cannot
            # settle either: stop, so that the worker fails loudly and is restarted.
            log.exception(
                "could not settle a message; stopping",
                group=self._group,
                message_id=held.message.message_id,
                outcome=type(outcome).__name__,
            )
            self._failure = self._failure or error
            self.stop()
        finally:
            await self._stop_keeping(held)

    async def _settle(self, held: _Held, outcome: Outcome) -> None:
        """Make ``outcome`` durable; the message stays hidden meanwhile (its keeper runs
        until the last write), so that no other receiver gets it while this one settles."""
        # Both set before anything is received.
        assert self._queues is not None
        assert self._deletes is not None
        client, queues, message = self._client, self._queues, held.message
        delete = functools.partial(self._deletes.delete, message)
        if isinstance(outcome, Ack):
            await self._until_written(delete, "an ack")
        elif isinstance(outcome, Retry):
            # Stopped first, so that a late extension cannot undo the retry's visibility.
            await self._stop_keeping(held)
            visibility = _retry_visibility(outcome.delay)
            await self._until_written(
                functools.partial(client.change_visibility, queues.url, message, visibility),
                "a retry",
            )
        else:
            assert isinstance(outcome, DeadLetter)

            async def keep(body: bytes, stored: Mapping[str, str]) -> None:
                text = body.decode("utf-8", errors="ignore")  # a cut may split a character
                await self._until_written(
                    functools.partial(
                        client.send, queues.dead_letters_url, text, stored, message.key
                    ),
                    "a dead letter",
                )

            # Kept first, deleted after: a crash in between makes a duplicate, never a loss.
            await write_dead_letter(
                keep,
                message.body.encode("utf-8"),
                dead_letter_headers(self._group, held.delivery, outcome),
            )
            await self._until_written(delete, "an ack")

    async def _until_written(self, write: Callable[[], Awaitable[object]], what: str) -> None:
        async def written() -> None:
            await write()

        await write_until_done(
            written,
            within=self._options.outcome_timeout,
            what=what,
            transient=transient,
            queue=self._queues.name if self._queues is not None else "",
        )
