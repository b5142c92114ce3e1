"""A transactional subscriber's inbox row commits with its handler's effects, or not at all:
a handler that fails leaves no row, so the message's next try really runs it."""

from __future__ import annotations

import asyncio

import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from shop.contracts import OrderCreated, wrap
from shop.contracts.examples import examples
from shop.messaging.context import MessageContext
from shop.messaging.message import Delivery
from shop.messaging.outbox import outbox_row
from shop.messaging.outcome import Ack, Retry
from shop.messaging.pipeline import Pipeline
from shop.messaging.subscriber import Router

pytestmark = pytest.mark.integration


MESSAGE = outbox_row(wrap(examples()[OrderCreated], key="order-1", correlation_id="c-1"))
"""One message, delivered again and again."""


def delivery(attempt: int = 1) -> Delivery:
    return Delivery(
        body=MESSAGE["body"], headers=MESSAGE["headers"], source="orders", attempt=attempt
    )


async def counts(sessions: async_sessionmaker[AsyncSession]) -> tuple[int, int]:
    """(inbox rows, effects)."""
    async with sessions() as session:
        inbox = (await session.execute(text("SELECT count(*) FROM inbox"))).scalar_one()
        effects = (await session.execute(text("SELECT count(*) FROM effects"))).scalar_one()
    return inbox, effects


@pytest.fixture
async def effects(sessions: async_sessionmaker[AsyncSession]) -> None:
    async with sessions() as session, session.begin():
        await session.execute(text("CREATE TABLE effects (order_number text NOT NULL)"))


@pytest.mark.usefixtures("effects")
async def test_a_failed_handler_leaves_no_inbox_row_and_its_next_try_has_its_effect_once(
    sessions: async_sessionmaker[AsyncSession],
) -> None:
    tries: list[int] = []
    router = Router("inbox-test")

    @router.subscriber(OrderCreated)
    async def record(event: OrderCreated, context: MessageContext) -> None:
        assert context.session is not None
        await context.session.execute(
            text("INSERT INTO effects VALUES (:number)"), {"number": event.order_number}
        )
        tries.append(context.attempt)
        if context.attempt == 1:
            raise RuntimeError("the first try fails after its write")

    pipeline = Pipeline(router, sessions=sessions)

    assert isinstance(await pipeline.process(delivery()), Retry)
    assert await counts(sessions) == (0, 0)  # neither the row nor the effect

    assert await pipeline.process(delivery(attempt=2)) == Ack()
    assert await counts(sessions) == (1, 1)

    assert await pipeline.process(delivery(attempt=3)) == Ack(duplicate=True)
    assert await counts(sessions) == (1, 1)
    assert tries == [1, 2]


@pytest.mark.usefixtures("effects")
async def test_a_second_delivery_waits_for_the_first_and_then_skips_it(
    sessions: async_sessionmaker[AsyncSession],
) -> None:
    # Delivered twice at once (a rebalance, a visibility timeout): the second waits on the
    # first's uncommitted inbox row, then finds it and has no effect of its own.
    started, release = asyncio.Event(), asyncio.Event()
    router = Router("inbox-test")

    @router.subscriber(OrderCreated)
    async def record(event: OrderCreated, context: MessageContext) -> None:
        assert context.session is not None
        await context.session.execute(
            text("INSERT INTO effects VALUES (:number)"), {"number": event.order_number}
        )
        started.set()
        await release.wait()

    pipeline = Pipeline(router, sessions=sessions)
    first = asyncio.create_task(pipeline.process(delivery()))
    await started.wait()
    second = asyncio.create_task(pipeline.process(delivery()))
    await asyncio.sleep(0.3)
    assert not second.done()  # held by the first's row
    release.set()
    assert await first == Ack()
    assert await second == Ack(duplicate=True)
    assert await counts(sessions) == (1, 1)


@pytest.mark.usefixtures("effects")
async def test_a_handler_that_rolls_back_its_session_is_not_taken_as_done(
    sessions: async_sessionmaker[AsyncSession],
) -> None:
    # Its rollback takes the inbox row with it; what it writes after begins a transaction
    # of its own, which must not stand in for the message's.
    router = Router("inbox-test")

    @router.subscriber(OrderCreated)
    async def record(event: OrderCreated, context: MessageContext) -> None:
        assert context.session is not None
        insert = text("INSERT INTO effects VALUES (:number)")
        await context.session.execute(insert, {"number": event.order_number})
        await context.session.rollback()
        await context.session.execute(insert, {"number": event.order_number})

    outcome = await Pipeline(router, sessions=sessions).process(delivery())

    assert not isinstance(outcome, Ack)
    assert await counts(sessions) == (0, 0)
