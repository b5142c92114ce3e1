"""Trace context and correlation id flow from a handled message into the handler's logs and
into the events it publishes through the outbox, in the same transaction as its inbox row."""

from __future__ import annotations

import structlog
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from shop.contracts import OrderCreated, OrderPaid, decode, examples, wrap
from shop.messaging import MessageContext, MessagingSettings, Router, Worker, add
from shop.messaging.schema import inbox, outbox
from shop.messaging.testing import in_trace, publish, running, wait_until
from shop.messaging.transports.memory import MemoryBroker, MemoryTransport

TRACEPARENT = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"


async def test_published_events_inherit_correlation_and_trace_and_name_their_cause(
    sessions: async_sessionmaker[AsyncSession], unique_name: str
) -> None:
    router = Router(unique_name)

    @router.subscriber(OrderCreated)
    async def mark_paid(event: OrderCreated, ctx: MessageContext) -> None:
        ctx.log.info("marking paid")
        paid = examples.examples()[OrderPaid].model_copy(update={"order_id": event.order_id})
        await add(ctx.db, paid, key=str(event.order_id))

    handled = wrap(examples.examples()[OrderCreated], key="order-1", correlation_id="checkout-42")
    transport = MemoryTransport(MemoryBroker())
    worker = Worker(MessagingSettings(), transport, routers=[router], sessions=sessions)
    with structlog.testing.capture_logs() as logs:
        async with running(worker):
            with in_trace(TRACEPARENT):  # sent with this traceparent header
                await publish(transport, handled)
            await wait_until(lambda: any(e["event"] == "marking paid" for e in logs))

    async with sessions() as session:
        [row] = (await session.execute(select(outbox))).all()
        inbox_rows = (await session.execute(select(inbox.c.event_id))).scalars().all()
    published = decode(row.body)
    assert published.type == "order.paid"
    assert published.causation_id == handled.event_id
    assert published.correlation_id == "checkout-42"
    # The same trace: the handled message's traceparent, or (where the process records
    # spans) a child of the handler's span in that trace.
    assert row.headers["traceparent"].split("-")[1] == TRACEPARENT.split("-")[1]
    assert inbox_rows == [handled.event_id]
    [line] = [e for e in logs if e["event"] == "marking paid"]
    assert line["trace_id"] == "4bf92f3577b34da6a3ce929d0e0e4736"
    assert line["correlation_id"] == "checkout-42"
    assert line["event_id"] == str(handled.event_id)
