"""In one process, the same semantics as the real transports: a queue per consumer
subscribed to topics, at-least-once delivery, delayed retries, dead letters, redrive.

Its sections come in the order of the modules of the ``kafka`` and ``sqs`` packages:
wire, broker (in place of their client), transport, consumer, dead letters.
"""

from __future__ import annotations

import asyncio
import functools
import itertools
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from shop.messaging import headers as h
from shop.messaging.deadletters import (
    Arrival,
    StoredDeadLetter,
    dead_letter_headers,
    read_dead_letter,
)
from shop.messaging.dispatch import KeyedDispatcher
from shop.messaging.message import Delivery, OutgoingMessage
from shop.messaging.naming import Naming
from shop.messaging.outcome import Ack, DeadLetter, Outcome, Retry
from shop.messaging.pipeline import Pipeline
from shop.messaging.transports.base import ConsumerLifecycle, ConsumerOptions, Features

# -- wire -----------------------------------------------------------------------------


@dataclass(slots=True)
class _Queued:
    delivery: Delivery


def _first_try(body: bytes, headers: Mapping[str, str], source: str, key: str | None) -> Delivery:
    """A message entering a queue from a topic or from the dead letters, with headers of
    its own (a retry adds to them without changing what was published)."""
    return Delivery(body=body, headers=dict(headers), source=source, key=key)


def _retried(delivery: Delivery, outcome: Retry) -> Delivery:
    """The next try of a failed delivery, headers as a real transport would carry them."""
    return replace(
        delivery,
        attempt=outcome.attempt + 1,
        first_failure_at=outcome.first_failure_at,
        headers={
            **delivery.headers,
            h.ATTEMPT: str(outcome.attempt),
            h.FIRST_FAILURE_AT: outcome.first_failure_at.isoformat(),
        },
    )


# -- broker ---------------------------------------------------------------------------


class MemoryBroker:
    """Topics fan out to the queues of the consumers subscribed to them (like SNS → SQS).
    A message published to a topic nobody subscribes to is dropped, as SNS drops it."""

    def __init__(self) -> None:
        self.subscriptions: defaultdict[str, set[str]] = defaultdict(set)
        self.queues: defaultdict[str, asyncio.Queue[_Queued]] = defaultdict(asyncio.Queue)
        self.dead_letters: defaultdict[str, dict[str, StoredDeadLetter]] = defaultdict(dict)
        self.published: list[OutgoingMessage] = []
        self._ids = itertools.count(1)

    def enqueue(self, group: str, delivery: Delivery) -> None:
        self.queues[group].put_nowait(_Queued(delivery))

    def publish(self, message: OutgoingMessage) -> None:
        self.published.append(message)
        for group in sorted(self.subscriptions[message.topic]):
            self.enqueue(
                group, _first_try(message.body, message.headers, message.topic, message.key)
            )

    def next_dead_letter_id(self) -> str:
        return str(next(self._ids))


_broker: MemoryBroker | None = None


def _default_broker() -> MemoryBroker:
    """One broker per process, so that a relay and a worker configured apart still meet."""
    global _broker  # noqa: PLW0603
    if _broker is None:
        _broker = MemoryBroker()
    return _broker


# -- transport ------------------------------------------------------------------------


class MemoryTransport:
    name = "memory"
    features = Features(largest_body=None, key_order=True)

    def __init__(self, broker: MemoryBroker | None = None, naming: Naming | None = None) -> None:
        self.broker = broker or _default_broker()
        self.naming = naming or Naming()
        self._courier = MemoryDeadLetterCourier(self.broker, self.naming)

    async def start(self) -> None:
        return None

    async def close(self) -> None:
        return None

    async def declare(self, pipeline: Pipeline) -> None:
        for subscriber in pipeline.router:
            self.broker.subscriptions[self.naming.topic(subscriber.contract)].add(
                self.naming.queue(pipeline.group)
            )

    async def publish(self, messages: Sequence[OutgoingMessage]) -> None:
        for message in messages:
            self.broker.publish(message)

    def consumer(self, pipeline: Pipeline, options: ConsumerOptions) -> MemoryConsumer:
        return MemoryConsumer(self.broker, pipeline, options, self.naming)

    @property
    def dead_letter_courier(self) -> MemoryDeadLetterCourier:
        return self._courier


# -- consumer -------------------------------------------------------------------------


class MemoryConsumer(ConsumerLifecycle):
    def __init__(
        self, broker: MemoryBroker, pipeline: Pipeline, options: ConsumerOptions, naming: Naming
    ) -> None:
        super().__init__()
        self._broker = broker
        self._pipeline = pipeline
        self._group = pipeline.group
        # Its queue and dead letters by the names SQS gives them: each namespace's own.
        self._queue = naming.queue(pipeline.group)
        self._dead_letters = naming.dead_letters(pipeline.group)
        self._options = options

    async def run(self) -> None:
        dispatcher = KeyedDispatcher(self._options.max_in_flight)
        queue = self._broker.queues[self._queue]
        self._running = True
        stopping = asyncio.create_task(self._stopping.wait())
        try:
            while not self._stopping.is_set():
                getting = asyncio.create_task(queue.get())
                await asyncio.wait({getting, stopping}, return_when=asyncio.FIRST_COMPLETED)
                if not getting.done():
                    getting.cancel()
                    break
                queued = getting.result()
                await dispatcher.submit(
                    (queued.delivery.source, queued.delivery.key),
                    functools.partial(self._handle, queued),
                )
        finally:
            stopping.cancel()
            await dispatcher.drain(self._options.drain_timeout)
            self._running = False

    async def _handle(self, queued: _Queued) -> None:
        try:
            outcome = await self._pipeline.process(queued.delivery)
            self._settle(queued.delivery, outcome)
        except BaseException:
            # Abandoned at shutdown, or a bug: not acknowledged, so it is delivered again.
            self._broker.enqueue(self._queue, queued.delivery)
            raise

    def _settle(self, delivery: Delivery, outcome: Outcome) -> None:
        if isinstance(outcome, Ack):
            return
        if isinstance(outcome, Retry):
            loop = asyncio.get_running_loop()
            loop.call_later(
                outcome.delay, self._broker.enqueue, self._queue, _retried(delivery, outcome)
            )
            return
        assert isinstance(outcome, DeadLetter)
        letter_id = self._broker.next_dead_letter_id()
        self._broker.dead_letters[self._dead_letters][letter_id] = read_dead_letter(
            letter_id,
            delivery.body,
            dead_letter_headers(self._group, delivery, outcome),
            key=delivery.key,
        )


# -- dead letters ---------------------------------------------------------------------


class MemoryDeadLetterCourier:
    """The dead letters a consumer left on the broker, until the worker keeps them."""

    def __init__(self, broker: MemoryBroker, naming: Naming) -> None:
        self._broker = broker
        self._naming = naming

    async def fetch(self, group: str, limit: int) -> list[Arrival]:
        waiting = list(self._broker.dead_letters[self._naming.dead_letters(group)].values())
        waiting = waiting[:limit]
        return [Arrival(letter, handle=letter.transport_id) for letter in waiting]

    async def fetched(self, group: str, arrivals: Sequence[Arrival]) -> None:
        for arrival in arrivals:
            self._broker.dead_letters[self._naming.dead_letters(group)].pop(
                str(arrival.handle), None
            )

    async def unfetched(self, group: str, arrivals: Sequence[Arrival]) -> None:
        return None  # they stay where they are until fetched

    async def redeliver(self, group: str, letter: StoredDeadLetter) -> None:
        self._broker.enqueue(
            self._naming.queue(group),
            _first_try(letter.body, letter.headers, letter.source, letter.key),
        )
