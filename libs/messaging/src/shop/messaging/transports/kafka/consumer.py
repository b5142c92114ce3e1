"""The Kafka consume loop of one consumer: a consumer-group member (a FastStream
subscriber) reading the event topics and the delay topics, many messages in flight and one
at a time per key.

A retry is written to a delay topic and a message given up on to the dead-letter topic (a
prefix of it, with its size and digest, when it is too large for the broker); offsets are
committed only up to the first message whose outcome is not durable yet, so a crash or
rebalance delivers again whatever was not finished, never skips it. An outcome that cannot
be written within the outcome timeout stops the consumer, and the worker with it.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import partial
from typing import Final

import structlog

from shop.messaging import headers as h
from shop.messaging.deadletters import dead_letter_headers
from shop.messaging.dispatch import KeyedDispatcher
from shop.messaging.errors import MessageTooLarge, OutcomeNotWritten
from shop.messaging.message import Delivery
from shop.messaging.naming import Naming
from shop.messaging.outcome import Ack, Outcome, Retry
from shop.messaging.pipeline import Pipeline
from shop.messaging.retry import RetryPolicy
from shop.messaging.settling import too_large_to_retry, write_dead_letter, write_until_done
from shop.messaging.transports.base import ConsumerLifecycle, ConsumerOptions
from shop.messaging.transports.kafka.client import (
    GroupMember,
    KafkaClient,
    KafkaError,
    Partition,
)
from shop.messaging.transports.kafka.topology import (
    delay_seconds,
    delay_topics,
    event_topics,
    group_id,
)
from shop.messaging.transports.kafka.wire import (
    KafkaRecord,
    delivery_of,
    retry_headers,
    seconds_until_due,
)

log = structlog.get_logger("shop.messaging")

_COMMIT_INTERVAL: Final = 0.5
"""Seconds between commits of the offsets whose outcomes are durable."""
_FETCH_FAILURES_APART: Final = 15.0
"""Fetch errors closer together than this count as one failing stretch (FastStream's
consume loop sleeps 5 s after each before it fetches again)."""
_COMMIT_TIMEOUT: Final = 10.0
"""Longest wait for one commit (the client would otherwise wait for the broker forever)."""


@dataclass(slots=True)
class _Progress:
    """Offsets of one assigned partition: which are in flight, how far a commit may go.

    A new object per assignment, so that work finishing after its partition was revoked
    updates a forgotten object and never the next owner's commits.
    """

    in_flight: set[int] = field(default_factory=set)
    next_offset: int | None = None
    committed: int | None = None

    def dispatched(self, offset: int) -> None:
        self.in_flight.add(offset)
        self.next_offset = max(self.next_offset or 0, offset + 1)

    def completed(self, offset: int) -> None:
        self.in_flight.discard(offset)

    def commit_offset(self) -> int | None:
        """The offset to commit (where a new owner would start): the oldest unfinished
        message, or just past the last one handed out when all are finished."""
        if self.in_flight:
            return min(self.in_flight)
        return self.next_offset

    def uncommitted(self) -> int | None:
        offset = self.commit_offset()
        return None if offset is None or offset == self.committed else offset


class KafkaConsumer(ConsumerLifecycle):
    """One consumer-group member for one consumer: its event topics and its delay topics,
    many messages in flight, one at a time per key.

    The member is a FastStream subscriber, which fetches and hands each record to
    :meth:`_receive` one after the other; handing over waits while every slot is taken
    (the back-pressure that keeps the subscriber from fetching further ahead).
    """

    def __init__(
        self, client: KafkaClient, naming: Naming, pipeline: Pipeline, options: ConsumerOptions
    ) -> None:
        super().__init__()
        self._client = client
        self._naming = naming
        self._pipeline = pipeline
        self._group = pipeline.group
        self._options = options
        self._group_id = group_id(naming, self._group)
        self._event_topics = event_topics(naming, pipeline.router)
        self._delay_topics = delay_topics(naming, pipeline.router)
        self._retry_delays = [s for s in delay_seconds(pipeline.router) if s > 0]
        self._member: GroupMember | None = None
        self._dispatcher: KeyedDispatcher | None = None
        self._progress: dict[Partition, _Progress] = {}
        self._resumes: dict[Partition, asyncio.TimerHandle] = {}
        self._commit_lock = asyncio.Lock()
        self._failure: BaseException | None = None
        self._failing_since: dict[str, float | None] = {"fetch": None, "commit": None}
        """When fetching, or committing, began failing without a success since."""
        self._last_fetch_failure = 0.0

    @property
    def subscriber(self) -> object | None:
        """The FastStream subscriber this consumer runs as (None when not running)."""
        return None if self._member is None else self._member.subscriber

    async def run(self) -> None:
        dispatcher = KeyedDispatcher(self._options.max_in_flight)
        member = self._client.group_member(
            self._group_id,
            [*self._event_topics, *self._delay_topics],
            receive=self._receive,
            fetch_failed=self._fetch_failed,
            revoked=self._partitions_revoked,
            assigned=self._partitions_assigned,
        )
        self._member, self._dispatcher = member, dispatcher
        try:
            await member.start()
            await self._run(member, dispatcher)
        finally:
            await member.stop()  # leaves the group, so the partitions move on at once
            self._member = self._dispatcher = None

    async def _run(self, member: GroupMember, dispatcher: KeyedDispatcher) -> None:
        self._running = True
        log.info(
            "kafka consumer started",
            group=self._group_id,
            topics=[*self._event_topics, *self._delay_topics],
        )
        committing = asyncio.create_task(self._commit_periodically())
        stopping = asyncio.create_task(self._stopping.wait())
        try:
            await asyncio.wait({committing, stopping}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            self.stop()  # also when committing failed: nothing new is handed over
            for task in (committing, stopping):
                task.cancel()
            await asyncio.wait({committing, stopping})
            self._running = False
            member.pause_all()
            self._cancel_resumes(set(self._resumes))
            # A hand-over waiting for a slot that the drain frees is refused, so the
            # record it carried stays in flight and no commit passes it.
            finished = await dispatcher.drain(self._options.drain_timeout)
            if not finished:
                log.warning(
                    "messages still in flight at shutdown were abandoned; "
                    "they will be delivered again",
                    group=self._group_id,
                )
            await self._commit(set(self._progress))
            log.info("kafka consumer stopped", group=self._group_id)
        if not committing.cancelled() and (error := committing.exception()) is not None:
            raise error
        if self._failure is not None:
            raise self._failure

    # -- receiving ----------------------------------------------------------------------

    async def _receive(self, record: KafkaRecord) -> None:
        """Take one record from the subscriber: hand it to a slot, or hold its partition
        when it is a retry not due yet. A record refused here is not committed, so it is
        delivered again (to this member after a resume, or to the partition's next owner)."""
        member, dispatcher = self._member, self._dispatcher
        if member is None or dispatcher is None or self._stopping.is_set():
            return
        try:
            await self._dispatch(member, dispatcher, record)
        except Exception as error:
            # FastStream would log this and go on fetching past a record that can now
            # never be committed: stop instead, so that the worker fails loudly.
            log.exception("consumer failed taking a record; stopping", group=self._group_id)
            self._fail(error)

    async def _dispatch(
        self, member: GroupMember, dispatcher: KeyedDispatcher, record: KafkaRecord
    ) -> None:
        partition = (record.topic, record.partition)
        progress = self._tracked(member, partition)
        if progress is None:
            return  # revoked since the fetch
        delayed = record.topic in self._delay_topics
        wait = seconds_until_due(record) if delayed else 0.0
        if wait > 0:
            self._hold(member, partition, record.offset, wait)
            return
        delivery = delivery_of(record, delayed=delayed)
        progress.dispatched(record.offset)
        await dispatcher.submit(
            _serial_key(record, delivery),
            partial(self._handle, delivery, progress, record.offset),
        )

    def _tracked(self, member: GroupMember, partition: Partition) -> _Progress | None:
        """The progress of ``partition`` while this member owns it, else None."""
        if not member.owns(partition):
            return None
        # Records can come before the assignment callback has run: track them already.
        return self._progress.setdefault(partition, _Progress())

    def _fail(self, error: BaseException) -> None:
        self._failure = self._failure or error
        self.stop()

    def _fetch_failed(self, error: KafkaError) -> None:
        """FastStream's consume loop logged a failed fetch and will try again in 5 s, for
        ever: fetches that keep failing for the outcome timeout stop the consumer."""
        now = time.monotonic()
        if now - self._last_fetch_failure > _FETCH_FAILURES_APART:
            self._failing_since["fetch"] = None  # a new stretch: the last one ended
        self._last_fetch_failure = now
        self._still_failing("fetch", f"could not fetch from Kafka: {error!r}")

    def _still_failing(self, what: str, reason: str) -> None:
        now = time.monotonic()
        since = self._failing_since[what]
        if since is None:
            self._failing_since[what] = now
        elif now - since > self._options.outcome_timeout:
            seconds = self._options.outcome_timeout
            self._fail(OutcomeNotWritten(f"{reason}, for more than {seconds:g} s"))

    # -- holding a delayed message until it is due --------------------------------------

    def _hold(self, member: GroupMember, partition: Partition, offset: int, wait: float) -> None:
        """Leave a delayed message where it is until it is due, without taking a handler
        slot: stop fetching its partition, rewind to it, and resume when due."""
        member.pause_at(partition, offset)  # owned: ``_tracked`` just said so, no await since
        loop = asyncio.get_running_loop()
        self._cancel_resumes({partition})
        self._resumes[partition] = loop.call_later(wait, self._resume, partition)

    def _resume(self, partition: Partition) -> None:
        self._resumes.pop(partition, None)
        member = self._member
        if member is None or self._stopping.is_set():
            return
        if member.owns(partition):
            member.resume(partition)

    def _cancel_resumes(self, partitions: set[Partition]) -> None:
        for partition in partitions:
            timer = self._resumes.pop(partition, None)
            if timer is not None:
                timer.cancel()

    # -- handling and settling ----------------------------------------------------------

    async def _handle(self, delivery: Delivery, progress: _Progress, offset: int) -> None:
        if self._failure is not None:
            return  # stopping on a failure: no commit can pass it, so this comes again
        try:
            outcome = await self._pipeline.process(delivery)
            await self._settle(delivery, outcome)
        except Exception as error:
            # The pipeline turns every handler failure into an outcome, so this is an
            # outcome that could not be written, or a bug. This offset can never be
            # committed now, nor any after it: stop, so that the worker fails loudly and
            # the restarted consumer gets the message again.
            log.exception("consumer failed on a message; stopping", group=self._group_id)
            self._fail(error)
            return
        progress.completed(offset)

    async def _settle(self, delivery: Delivery, outcome: Outcome) -> None:
        if isinstance(outcome, Ack):
            return
        if isinstance(outcome, Retry):
            topic = self._naming.delay_topic(self._group, self._delay_for(delivery, outcome))
            try:
                await self._write(topic, delivery.body, retry_headers(delivery, outcome), delivery)
                return
            except MessageTooLarge as error:
                outcome = too_large_to_retry(outcome, error)
        topic = self._naming.dead_letters(self._group)
        await write_dead_letter(
            lambda body, stored: self._write(topic, body, stored, delivery),
            delivery.body,
            dead_letter_headers(self._group, delivery, outcome),
        )

    def _delay_for(self, delivery: Delivery, outcome: Retry) -> float:
        """The nominal delay that names the delay topic of this retry: the subscriber's
        schedule, held to the delay topics that were declared for the consumer."""
        subscriber = self._pipeline.router.for_type(delivery.headers.get(h.MESSAGE_TYPE, ""))
        policy = subscriber.retry if subscriber is not None else RetryPolicy()
        nominal = policy.nominal_delay(outcome.attempt)
        if not self._retry_delays:
            return 0.0
        return min(self._retry_delays, key=lambda declared: abs(declared - nominal))

    async def _write(
        self, topic: str, body: bytes, headers: Mapping[str, str], delivery: Delivery
    ) -> None:
        """The outcome must be durable before the message counts as done: try until it is
        written, for as long as the outcome timeout allows."""
        await write_until_done(
            partial(self._client.send, topic, body, headers, delivery.key),
            within=self._options.outcome_timeout,
            what=f"the outcome of a message to {topic}",
            transient=_is_kafka_error,
            source=delivery.source,
        )

    # -- committing ---------------------------------------------------------------------

    async def _commit_periodically(self) -> None:
        """Commits on a clock of their own, not between fetches: a fetch can wait for
        free slots as long as the slowest handler takes."""
        while True:
            await asyncio.sleep(_COMMIT_INTERVAL)
            await self._commit(set(self._progress))

    async def _commit(self, partitions: set[Partition]) -> None:
        member = self._member
        if member is None:
            return
        async with self._commit_lock:
            offsets = {
                partition: offset
                for partition in partitions
                if (progress := self._progress.get(partition)) is not None
                and (offset := progress.uncommitted()) is not None
            }
            if not offsets:
                self._failing_since["commit"] = None
                return
            try:
                async with asyncio.timeout(_COMMIT_TIMEOUT):
                    await member.commit(offsets)
            except (KafkaError, TimeoutError) as error:
                # Not fatal at once (a rebalance refuses commits for a moment): the next
                # commit carries these offsets, or the new owner of a revoked partition
                # handles its uncommitted messages again. Failing for the outcome timeout
                # stops the consumer: its committed offsets would stall behind a warning.
                log.warning("could not commit offsets", group=self._group_id, error=repr(error))
                self._still_failing("commit", f"could not commit offsets: {error!r}")
                return
            self._failing_since["commit"] = None
            for partition, offset in offsets.items():
                progress = self._progress.get(partition)
                if progress is not None:
                    progress.committed = offset

    async def _partitions_revoked(self, revoked: set[Partition]) -> None:
        self._cancel_resumes(revoked)
        await self._commit(revoked)
        for partition in revoked:
            self._progress.pop(partition, None)

    def _partitions_assigned(self, assigned: set[Partition]) -> None:
        for partition in assigned:
            # Kept when records of it were already dispatched (see ``_tracked``).
            self._progress.setdefault(partition, _Progress())
        log.info("partitions assigned", group=self._group_id, partitions=len(assigned))


def _is_kafka_error(error: Exception) -> bool:
    # A refusal that lasts (a missing topic, a denied write) ends with the outcome timeout.
    return isinstance(error, KafkaError)


def _serial_key(record: KafkaRecord, delivery: Delivery) -> tuple[str, str]:
    # By the original topic, so a key's retries and its new messages do not overlap;
    # a message without a key has no order to keep.
    if delivery.key is None:
        return (delivery.source, f"{record.topic}:{record.id}")
    return (delivery.source, delivery.key)
