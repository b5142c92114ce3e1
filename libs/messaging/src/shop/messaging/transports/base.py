"""The tiny interface every transport implements, identically shaped in each of them.

A transport moves bytes: it publishes :class:`OutgoingMessage` batches, feeds each
consumer's deliveries to a :class:`Pipeline`, and makes the outcome durable (ack, delayed
retry, dead letter). Everything else lives above it, once.

The ``kafka`` and ``sqs`` packages have the same modules, one job each: ``wire`` (how a
message is laid out on the broker), ``client`` (every call to the broker's SDK),
``topology`` (what a consumer needs on the broker), ``transport`` (this Protocol),
``consumer`` (the consume loop and settling) and ``deadletters`` (the broker's
:class:`DeadLetterCourier`). ``memory`` is one module with its sections in that order:
wire, broker (in place of a client), transport, consumer, dead letters.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from shop.messaging.deadletters import DeadLetterCourier
from shop.messaging.message import OutgoingMessage
from shop.messaging.naming import Naming
from shop.messaging.pipeline import Pipeline


@dataclass(frozen=True, slots=True)
class Features:
    """What a transport's broker promises beyond what every transport does: the behaviour
    suite tests each promise on the transports that make it, and says which do not."""

    largest_body: int | None
    """Bytes the broker takes in one message at publication (None: no limit of its own;
    the consumer dead-letters what it cannot read)."""
    key_order: bool
    """A key's messages are handled one after the other, in the order published."""


@dataclass(frozen=True, slots=True)
class ConsumerOptions:
    max_in_flight: int = 64
    """Messages handled at once by one consumer (each key still one at a time)."""
    drain_timeout: float = 30.0
    """On shutdown, how long in-flight messages may take to finish before they are
    abandoned (and so delivered again, elsewhere)."""
    outcome_timeout: float = 60.0
    """How long writing one outcome (a retry, a dead letter, an ack) may keep failing
    before the consumer stops with :class:`~shop.messaging.errors.OutcomeNotWritten`."""


class Consumer(Protocol):
    @property
    def ready(self) -> bool:
        """Connected and receiving."""
        ...

    async def run(self) -> None:
        """Receive and handle until :meth:`stop`; then drain and return."""
        ...

    def stop(self) -> None:
        """Stop taking new messages; :meth:`run` returns once in-flight ones are settled."""
        ...


class ConsumerLifecycle:
    """The state every consumer keeps alike: ready while it runs and has not been asked to
    stop; :meth:`stop` only asks, the consumer's ``run`` drains and returns."""

    def __init__(self) -> None:
        self._stopping = asyncio.Event()
        self._running = False

    @property
    def ready(self) -> bool:
        return self._running and not self._stopping.is_set()

    def stop(self) -> None:
        self._stopping.set()


class Transport(Protocol):
    name: str
    features: Features

    @property
    def naming(self) -> Naming:
        """The names of topics and queues on this transport's broker: whoever publishes
        through it (the relay) names topics the way its consumers subscribe to them."""
        ...

    async def start(self) -> None:
        """Connect (and create topics or queues when configured to)."""
        ...

    async def close(self) -> None: ...

    async def declare(self, pipeline: Pipeline) -> None:
        """Make sure what the pipeline's consumer needs exists: its subscriptions, delay
        topics or queues, dead-letter place. Idempotent."""
        ...

    async def publish(self, messages: Sequence[OutgoingMessage]) -> None:
        """Publish all of ``messages``, keeping their order per key, also across calls
        made concurrently (in the order the calls were made).

        Raises :class:`~shop.messaging.errors.PublishError` naming the indexes that may
        not have been published; the others were.
        """
        ...

    def consumer(self, pipeline: Pipeline, options: ConsumerOptions) -> Consumer: ...

    @property
    def dead_letter_courier(self) -> DeadLetterCourier:
        """Carries each consumer's dead letters from its dead-letter topic or queue to the
        worker's store, and a redriven one back to that consumer alone."""
        ...
