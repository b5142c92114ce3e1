"""One behavioural suite, run against every transport: memory, Kafka (Tansu) and SQS/SNS
(moto). Each test starts a real worker, publishes through the transport as the relay
does, and asserts on what the handlers saw and what ended as a dead letter. What only
some brokers promise (a key's order, a size limit) is tested where the transport's
:class:`~shop.messaging.transports.base.Features` say it is promised."""

from __future__ import annotations

import asyncio
import os
import signal
import uuid
from collections import Counter
from collections.abc import Sequence

import pytest
from sqlalchemy import Column, MetaData, String, Table, Uuid, func, insert, select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from shop.contracts import Envelope, OrderCreated, PaymentReceived, encode, examples, wrap
from shop.messaging import (
    DeadLetterFilter,
    DeadLetters,
    MessageContext,
    MessagingSettings,
    PermanentError,
    Router,
    StoredDeadLetter,
    Worker,
    create_transport,
)
from shop.messaging.deadletter_table import PostgresDeadLetterStore
from shop.messaging.message import OutgoingMessage
from shop.messaging.naming import Naming
from shop.messaging.outcome import Ack, DeadLetter, Retry
from shop.messaging.pipeline import OutcomeRecord
from shop.messaging.testing import eventually, outgoing, publish_with, running, wait_until
from shop.messaging.transports import Transport
from shop.messaging.transports.base import Features

WAIT = 90.0
"""Generous: a Kafka consumer group takes seconds to form on the embedded broker."""


def order_created(key: str | None = None) -> Envelope[OrderCreated]:
    """A valid OrderCreated of a new order; ``key`` names it in assertions."""
    order_id = uuid.uuid4()
    event = examples.examples()[OrderCreated].model_copy(update={"order_id": order_id})
    return wrap(event, key=key or str(order_id))


def raw(naming: Naming, body: bytes, key: str = "raw") -> OutgoingMessage:
    """A message that claims to be an OrderCreated but whose body may be anything."""
    return OutgoingMessage(topic=naming.topic(OrderCreated), key=key, body=body, headers={})


class Harness:
    """A worker with one subscriber for OrderCreated, and what it saw; its dead letters
    kept in a database of their own, as a service's are."""

    def __init__(
        self,
        settings: MessagingSettings,
        group: str,
        kept_in: async_sessionmaker[AsyncSession],
    ) -> None:
        self.settings = settings
        self.dead_letter_store = PostgresDeadLetterStore(kept_in)
        self.naming = Naming(settings.namespace)
        self.group = group
        self.outcomes: list[OutcomeRecord] = []
        self.handled: list[tuple[str, int]] = []

    def worker(
        self,
        router: Router,
        sessions: async_sessionmaker[AsyncSession] | None = None,
        transport: Transport | None = None,
    ) -> Worker:
        return Worker(
            self.settings,
            transport or create_transport(self.settings),
            routers=[router],
            sessions=sessions,
            observers=[self.outcomes.append],
            dead_letter_store=self.dead_letter_store,
        )

    async def publish(self, messages: Sequence[OutgoingMessage]) -> None:
        await publish_with(self.settings, *messages)

    def dead_letters(self, worker: Worker) -> DeadLetters:
        return worker.dead_letters(self.group)

    async def stored_dead_letters(self, worker: Worker, count: int) -> list[StoredDeadLetter]:
        """The dead letters once ``count`` of them are stored: an outcome is reported
        before the transport has made it durable."""
        letters: list[StoredDeadLetter] = []

        async def enough() -> bool:
            nonlocal letters
            letters = await self.dead_letters(worker).list()
            return len(letters) >= count

        await eventually(enough, within=WAIT, what=f"{count} stored dead letter(s)")
        return letters

    def outcomes_of(self, kind: type) -> list[OutcomeRecord]:
        return [record for record in self.outcomes if isinstance(record.outcome, kind)]


@pytest.fixture
def harness(
    settings: MessagingSettings,
    unique_name: str,
    kept_in: async_sessionmaker[AsyncSession],
) -> Harness:
    return Harness(settings, group=unique_name, kept_in=kept_in)


async def test_published_events_are_consumed(harness: Harness) -> None:
    router = Router(harness.group)

    @router.subscriber(OrderCreated, transactional=False)
    async def on_order_created(event: OrderCreated, ctx: MessageContext) -> None:
        harness.handled.append((str(ctx.envelope.event_id), ctx.attempt))

    envelopes = [order_created() for _ in range(5)]
    async with running(harness.worker(router)):
        await harness.publish([outgoing(e, naming=harness.naming) for e in envelopes])
        await wait_until(lambda: len(harness.handled) >= 5, within=WAIT, what="5 events")
    assert sorted(harness.handled) == sorted((str(e.event_id), 1) for e in envelopes)


async def test_transient_failure_is_retried_with_growing_delays(harness: Harness) -> None:
    router = Router(harness.group)

    @router.subscriber(OrderCreated, transactional=False, max_attempts=5)
    async def flaky(event: OrderCreated, ctx: MessageContext) -> None:
        harness.handled.append((ctx.envelope.key, ctx.attempt))
        if ctx.attempt < 4:
            raise ConnectionError("email provider timed out")

    envelope = order_created()
    async with running(harness.worker(router)):
        await harness.publish([outgoing(envelope, naming=harness.naming)])
        await wait_until(lambda: harness.outcomes_of(Ack) != [], within=WAIT, what="success")

    assert [attempt for _, attempt in harness.handled] == [1, 2, 3, 4]
    retries = [r.outcome for r in harness.outcomes_of(Retry)]
    delays = [r.delay for r in retries if isinstance(r, Retry)]
    assert len(delays) == 3
    assert delays == sorted(delays)
    assert delays[0] < delays[1] < delays[2]


async def test_poison_message_is_dead_lettered_after_max_attempts_while_others_flow(
    harness: Harness,
) -> None:
    router = Router(harness.group)
    poison = order_created(key="poison")

    @router.subscriber(OrderCreated, transactional=False, max_attempts=3)
    async def picky(event: OrderCreated, ctx: MessageContext) -> None:
        harness.handled.append((ctx.envelope.key, ctx.attempt))
        if ctx.envelope.key == "poison":
            raise RuntimeError("stock service answered 503")

    healthy = [order_created() for _ in range(4)]
    worker = harness.worker(router)
    async with running(worker):
        await harness.publish([outgoing(e, naming=harness.naming) for e in [poison, *healthy]])
        await wait_until(
            lambda: len(harness.outcomes_of(DeadLetter)) == 1, within=WAIT, what="dead letter"
        )
        await wait_until(
            lambda: len(harness.outcomes_of(Ack)) == 4, within=WAIT, what="the healthy events"
        )
        letters = await harness.stored_dead_letters(worker, 1)

    poison_attempts = [attempt for key, attempt in harness.handled if key == "poison"]
    assert poison_attempts == [1, 2, 3]
    [letter] = letters
    assert letter.body == encode(poison)
    assert letter.attempts == 3
    assert letter.error_type == "RuntimeError"
    assert letter.error_message == "stock service answered 503"
    assert letter.group == harness.group
    assert letter.message_type == "order.created"
    assert letter.first_failure_at <= letter.last_failure_at


async def test_permanent_error_is_dead_lettered_at_once(harness: Harness) -> None:
    router = Router(harness.group)

    @router.subscriber(OrderCreated, transactional=False)
    async def refuse(event: OrderCreated, ctx: MessageContext) -> None:
        harness.handled.append((ctx.envelope.key, ctx.attempt))
        raise PermanentError("order total does not match its lines")

    envelope = order_created()
    worker = harness.worker(router)
    async with running(worker):
        await harness.publish([outgoing(envelope, naming=harness.naming)])
        await wait_until(lambda: harness.outcomes_of(DeadLetter) != [], within=WAIT, what="DLQ")
        [letter] = await harness.stored_dead_letters(worker, 1)
    assert harness.handled == [(envelope.key, 1)]
    assert letter.attempts == 1
    assert letter.error_type == "PermanentError"
    assert "does not match" in letter.error_message


def bad_messages(features: Features) -> dict[str, tuple[bytes, str]]:
    """Bodies no handler may see, each with the error its dead letter must name."""
    valid = encode(order_created()).decode()
    bad = {
        "malformed JSON": (b"{not json at all", "UndecodableMessage"),
        "wrong type in a field": (
            valid.replace('"currency":"IDR"', '"currency":12', 1).encode(),
            "InvalidMessage",
        ),
        "unknown event type": (
            valid.replace('"order.created"', '"order.teleported"').encode(),
            "UnknownMessageType",
        ),
        "for a consumer that no longer exists": (
            encode(wrap(examples.examples()[PaymentReceived], key="pay-1")),
            "NoSubscriber",
        ),
    }
    oversize = valid.replace('"order_number"', '"padding":"' + "x" * 300_000 + '","order_number"')
    if features.largest_body is None:  # else the broker refuses it at publication
        bad["oversize"] = (oversize.encode(), "UndecodableMessage")
    return bad


async def test_bad_messages_are_dead_lettered_with_a_reason(harness: Harness) -> None:
    router = Router(harness.group)

    @router.subscriber(OrderCreated, transactional=False)
    async def on_order_created(event: OrderCreated, ctx: MessageContext) -> None:
        harness.handled.append((ctx.envelope.key, ctx.attempt))

    good = order_created()
    worker = harness.worker(router)
    bad = bad_messages(worker.transport.features)
    async with running(worker):
        await harness.publish(
            [raw(harness.naming, body, key=name) for name, (body, _) in bad.items()]
            + [outgoing(good, naming=harness.naming)]
        )
        await wait_until(
            lambda: len(harness.outcomes_of(DeadLetter)) == len(bad), within=WAIT, what="DLQ"
        )
        await wait_until(lambda: harness.handled != [], within=WAIT, what="the good event")
        letters = await harness.stored_dead_letters(worker, len(bad))

    assert harness.handled == [(good.key, 1)]
    by_body = {letter.body: letter for letter in letters}
    assert len(by_body) == len(bad)
    for name, (body, error_type) in bad.items():
        letter = by_body[body]
        assert (letter.error_type, letter.attempts) == (error_type, 1), name
        assert letter.error_message, name
    assert "currency" in by_body[bad["wrong type in a field"][0]].error_message
    if "oversize" in bad:
        assert "exceeds" in by_body[bad["oversize"][0]].error_message


async def test_a_redriven_dead_letter_succeeds(harness: Harness) -> None:
    router = Router(harness.group)
    broken = {"yes": True}

    @router.subscriber(OrderCreated, transactional=False)
    async def fixed_later(event: OrderCreated, ctx: MessageContext) -> None:
        if broken["yes"]:
            raise PermanentError("template missing")
        harness.handled.append((ctx.envelope.key, ctx.attempt))

    envelope = order_created()
    worker = harness.worker(router)
    async with running(worker):
        await harness.publish([outgoing(envelope, naming=harness.naming)])
        await wait_until(lambda: harness.outcomes_of(DeadLetter) != [], within=WAIT, what="DLQ")
        dead_letters = harness.dead_letters(worker)
        [letter] = await harness.stored_dead_letters(worker, 1)
        broken["yes"] = False
        await dead_letters.redrive_one(letter.id)
        await wait_until(lambda: harness.handled != [], within=WAIT, what="the redriven event")
        remaining = await dead_letters.list()
    assert harness.handled == [(envelope.key, 1)]
    assert remaining == []


_effects = MetaData()
effects = Table(
    "test_effects",
    _effects,
    Column("event_id", Uuid, nullable=False),
    Column("order_id", String(100), nullable=False),
)


async def test_redelivered_message_has_no_second_effect(
    harness: Harness, sessions: async_sessionmaker[AsyncSession]
) -> None:
    async with sessions() as session, session.begin():
        await session.run_sync(lambda s: _effects.create_all(s.connection()))
    router = Router(harness.group)

    @router.subscriber(OrderCreated)
    async def record(event: OrderCreated, ctx: MessageContext) -> None:
        await ctx.db.execute(
            insert(effects).values(event_id=ctx.envelope.event_id, order_id=ctx.envelope.key)
        )

    envelope = order_created()
    message = outgoing(envelope, naming=harness.naming)
    async with running(harness.worker(router, sessions=sessions)):
        await harness.publish([message])
        await wait_until(lambda: len(harness.outcomes_of(Ack)) == 1, within=WAIT, what="once")
        await harness.publish([message])  # the same event again, as a redelivery would bring
        await wait_until(lambda: len(harness.outcomes_of(Ack)) == 2, within=WAIT, what="twice")

    async with sessions() as session:
        rows = (await session.execute(select(func.count()).select_from(effects))).scalar_one()
    assert rows == 1
    assert [r.outcome for r in harness.outcomes_of(Ack)] == [Ack(), Ack(duplicate=True)]


async def test_sigterm_during_processing_loses_nothing(harness: Harness) -> None:
    router = Router(harness.group)
    first_started = asyncio.Event()
    release = asyncio.Event()
    completed: Counter[str] = Counter()

    @router.subscriber(OrderCreated, transactional=False, max_in_flight=1)
    async def slow(event: OrderCreated, ctx: MessageContext) -> None:
        first_started.set()
        await release.wait()
        completed[ctx.envelope.key] += 1

    envelopes = [order_created(key=f"order-{i}") for i in range(6)]
    harness.settings.max_in_flight = 1
    worker = harness.worker(router)
    run = asyncio.create_task(worker.run())
    await asyncio.wait_for(worker.started.wait(), WAIT)
    await harness.publish([outgoing(e, naming=harness.naming) for e in envelopes])
    await asyncio.wait_for(first_started.wait(), WAIT)

    os.kill(os.getpid(), signal.SIGTERM)  # the worker's own handler takes it
    await asyncio.sleep(0.2)
    release.set()  # the message in flight finishes within the drain timeout
    await asyncio.wait_for(run, WAIT)
    handled_before = sum(completed.values())
    assert handled_before >= 1

    # Whatever the first worker did not finish, the next one gets.
    async with running(harness.worker(router)):
        await wait_until(
            lambda: set(completed) == {e.key for e in envelopes}, within=WAIT, what="all"
        )
    assert set(completed) == {e.key for e in envelopes}


async def test_dead_letters_are_filtered_redriven_in_bulk_and_purged(harness: Harness) -> None:
    router = Router(harness.group)
    fixed = {"yes": False}

    @router.subscriber(OrderCreated, transactional=False)
    async def triage(event: OrderCreated, ctx: MessageContext) -> None:
        if fixed["yes"]:
            harness.handled.append((ctx.envelope.key, ctx.attempt))
            return
        if ctx.envelope.key.startswith("address"):
            raise PermanentError("550 mailbox unavailable")
        raise ValueError("template variable missing")

    bounced = [order_created(key=f"address-{i}") for i in range(2)]
    broken = [order_created(key=f"template-{i}") for i in range(3)]
    worker = harness.worker(router)
    async with running(worker):
        dead_letters = harness.dead_letters(worker)
        await harness.publish([outgoing(e, naming=harness.naming) for e in [*bounced, *broken]])
        await harness.stored_dead_letters(worker, 5)
        assert len(await dead_letters.list(DeadLetterFilter(error_type="ValueError"))) == 3
        purged = await dead_letters.purge(DeadLetterFilter(error_contains="mailbox"))
        assert purged == 2
        fixed["yes"] = True
        redriven = await dead_letters.redrive(
            DeadLetterFilter(message_type="order.created"), per_second=50
        )
        assert redriven == 3
        await wait_until(lambda: len(harness.handled) == 3, within=WAIT, what="the redriven")
        remaining = await dead_letters.list()
    assert sorted(key for key, _ in harness.handled) == sorted(e.key for e in broken)
    assert remaining == []


async def test_a_keys_messages_are_handled_one_at_a_time_in_their_order(harness: Harness) -> None:
    router = Router(harness.group)
    running_now: Counter[str] = Counter()
    overlapped: list[str] = []

    @router.subscriber(OrderCreated, transactional=False)
    async def on_order_created(event: OrderCreated, ctx: MessageContext) -> None:
        key = ctx.envelope.key
        running_now[key] += 1
        if running_now[key] > 1:
            overlapped.append(key)
        await asyncio.sleep(0.01)
        harness.handled.append((str(event.order_number), ctx.attempt))
        running_now[key] -= 1

    worker = harness.worker(router)
    if not worker.transport.features.key_order:
        pytest.skip(f"{worker.transport.name} does not promise a key's order")
    envelopes = [
        wrap(
            examples.examples()[OrderCreated].model_copy(
                update={"order_number": f"SK-{key}-{n:02d}"}
            ),
            key=key,
        )
        for n in range(10)
        for key in ("A", "B", "C")
    ]
    async with running(worker):
        await harness.publish([outgoing(e, naming=harness.naming) for e in envelopes])
        await wait_until(
            lambda: len(harness.handled) == len(envelopes), within=WAIT, what="every message"
        )
    assert overlapped == []
    for key in ("A", "B", "C"):
        numbers = [number for number, _ in harness.handled if number.startswith(f"SK-{key}-")]
        assert numbers == [f"SK-{key}-{n:02d}" for n in range(10)]


async def test_a_redriven_dead_letter_goes_back_to_the_group_that_failed_it_alone(
    harness: Harness,
) -> None:
    failing, other = Router(harness.group), Router(f"{harness.group}-other")
    handled: dict[str, list[uuid.UUID]] = {failing.group: [], other.group: []}
    broken = {"yes": True}

    @failing.subscriber(OrderCreated, transactional=False)
    async def refuse_until_fixed(event: OrderCreated, ctx: MessageContext) -> None:
        if broken["yes"]:
            raise PermanentError("no template for this order")
        handled[failing.group].append(ctx.envelope.event_id)

    @other.subscriber(OrderCreated, transactional=False)
    async def take(event: OrderCreated, ctx: MessageContext) -> None:
        handled[other.group].append(ctx.envelope.event_id)

    envelope = order_created()
    # Of the same key, so that where a key keeps its order, it comes after the first.
    after = order_created(key=envelope.key)
    worker = Worker(
        harness.settings,
        create_transport(harness.settings),
        routers=[failing, other],
        observers=[harness.outcomes.append],
        dead_letter_store=harness.dead_letter_store,
    )
    async with running(worker):
        await harness.publish([outgoing(envelope, naming=harness.naming)])
        [letter] = await harness.stored_dead_letters(worker, 1)
        await wait_until(lambda: handled[other.group] != [], within=WAIT, what="the other group")
        broken["yes"] = False
        await worker.dead_letters(failing.group).redrive_one(letter.id)
        await wait_until(lambda: handled[failing.group] != [], within=WAIT, what="the redrive")
        # Had the redrive reached the other group as well, it would have by the time a
        # message published after it has.
        await harness.publish([outgoing(after, naming=harness.naming)])
        await wait_until(
            lambda: after.event_id in handled[other.group], within=WAIT, what="a later message"
        )
        left = await worker.dead_letters(failing.group).list()

    assert handled[other.group] == [envelope.event_id, after.event_id]
    assert handled[failing.group][0] == envelope.event_id
    assert handled[failing.group].count(envelope.event_id) == 1
    assert left == []
