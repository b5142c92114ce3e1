"""The memory transport keeps namespaces apart as Kafka and SQS do: each namespace has its
own topics, consumer queues and dead letters on the one broker of a process, so that two
shops (two tests) in one process never take each other's messages."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

from shop.contracts import ConsumerGroup, PaymentReceived, wrap
from shop.messaging import MessageContext, Router
from shop.messaging.naming import Naming
from shop.messaging.pipeline import Pipeline
from shop.messaging.testing import publish
from shop.messaging.transports.memory import MemoryBroker, MemoryTransport


def router() -> Router:
    group = Router(ConsumerGroup.ORDER)

    @group.subscriber(PaymentReceived, transactional=False)
    async def paid(event: PaymentReceived, ctx: MessageContext) -> None:
        return None

    return group


def received() -> PaymentReceived:
    return PaymentReceived(
        payment_id=uuid.uuid4(),
        order_id=uuid.uuid4(),
        provider_event_id="evt_1",
        amount=89000,
        currency="IDR",
        paid_at=datetime.now(UTC),
    )


async def test_one_group_in_two_namespaces_has_a_queue_in_each() -> None:
    broker = MemoryBroker()
    ours = MemoryTransport(broker, Naming("ours"))
    theirs = MemoryTransport(broker, Naming("theirs"))
    for transport in (ours, theirs):
        await transport.declare(Pipeline(router()))

    await publish(ours, wrap(received(), key="order-1"))

    ours_queue, theirs_queue = broker.subscriptions.values()
    assert ours_queue.isdisjoint(theirs_queue), "one queue for both namespaces' consumers"
    assert sum(queue.qsize() for queue in broker.queues.values()) == 1
