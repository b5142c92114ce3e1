"""The order worker on real Postgres and a real Kafka-protocol broker: OrderCreated leaves
only after the commit, PaymentReceived moves an order to paid exactly once."""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import Any

import pytest
from aiokafka import AIOKafkaConsumer, TopicPartition
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker

from shop.contracts import Envelope, OrderCreated, OrderPaid, PaymentReceived, decode, wrap
from shop.messaging import Naming
from shop.messaging.schema import outbox
from shop.messaging.testing import eventually, publish_with, running
from shop.order.adapters.checkout import AsyncpgCheckoutStore
from shop.order.adapters.orders import SqlOrderStore
from shop.order.adapters.tables import orders, payment_conflicts
from shop.order.bootstrap import build_worker
from shop.order.domain.customer import Customer
from shop.order.ports import CheckoutTransaction
from shop.order.service_layer import cancellation
from shop.order.service_layer.checkout import place_in_transaction
from shop.order.settings import OrderSettings

CUSTOMER = Customer(id="cust_ayu", email="ayu@example.com")


@contextlib.asynccontextmanager
async def topic_reader(settings: OrderSettings, contract: type) -> AsyncIterator[AIOKafkaConsumer]:
    """A consumer of one event topic, from its beginning, outside any group."""
    topic = Naming(settings.messaging.namespace).topic(contract)
    consumer = AIOKafkaConsumer(
        bootstrap_servers=settings.messaging.kafka.bootstrap_servers, enable_auto_commit=False
    )
    await consumer.start()
    try:
        partitions = [TopicPartition(topic, p) for p in range(settings.messaging.kafka.partitions)]
        consumer.assign(partitions)
        await consumer.seek_to_beginning(*partitions)
        yield consumer
    finally:
        await consumer.stop()


async def read(consumer: AIOKafkaConsumer, seconds: float) -> list[Envelope[OrderCreated]]:
    """What arrives within ``seconds``."""
    received = []
    deadline = asyncio.get_running_loop().time() + seconds
    while (left := deadline - asyncio.get_running_loop().time()) > 0:
        batches = await consumer.getmany(timeout_ms=int(min(left, 0.5) * 1000))
        received += [decode(r.value) for records in batches.values() for r in records]
    return received  # type: ignore[return-value]


@contextlib.asynccontextmanager
async def checkout_transaction(engine: AsyncEngine) -> AsyncIterator[CheckoutTransaction]:
    """The transaction a checkout runs in, held open by the test."""
    async with AsyncpgCheckoutStore(engine).transaction() as checkout:
        yield checkout


async def place_order(checkout: CheckoutTransaction, key: str = "k1") -> uuid.UUID:
    answer = await place_in_transaction(
        checkout,
        CUSTOMER,
        [("SERUM-NIA-30", 1)],
        idempotency_key=key,
        request_hash="h",
    )
    return answer.order_id


async def test_order_created_reaches_the_bus_only_after_the_commit(
    kafka_settings: OrderSettings,
    engine: AsyncEngine,
    sessions: async_sessionmaker[AsyncSession],
) -> None:
    worker = build_worker(kafka_settings, health_port=0)
    async with running(worker), topic_reader(kafka_settings, OrderCreated) as reader:
        async with checkout_transaction(engine) as checkout:
            order_id = await place_order(checkout)
            assert await read(reader, 1.5) == []  # the relay runs, but sees nothing yet
        arrived = await read(reader, 10)
    assert [e.payload.order_id for e in arrived] == [order_id]


async def test_a_checkout_whose_transaction_fails_publishes_nothing(
    kafka_settings: OrderSettings,
    engine: AsyncEngine,
    sessions: async_sessionmaker[AsyncSession],
) -> None:
    async def failing_checkout() -> None:
        async with checkout_transaction(engine) as checkout:
            await place_order(checkout, key="doomed")
            raise RuntimeError("payment provider unreachable while reserving")

    worker = build_worker(kafka_settings, health_port=0)
    async with running(worker), topic_reader(kafka_settings, OrderCreated) as reader:
        with pytest.raises(RuntimeError):
            await failing_checkout()
        async with checkout_transaction(engine) as checkout:
            good = await place_order(checkout, key="fine")
        arrived = await read(reader, 5)
    assert [e.payload.order_id for e in arrived] == [good]


def payment_for(order_id: uuid.UUID, amount: int) -> Envelope[PaymentReceived]:
    payment = PaymentReceived(
        payment_id=uuid.uuid4(),
        order_id=order_id,
        provider_event_id=f"evt_{uuid.uuid4().hex[:8]}",
        amount=amount,
        currency="IDR",
        paid_at=datetime.now(UTC),
    )
    return wrap(payment, key=str(order_id))


async def deliver(settings: OrderSettings, envelope: Envelope[Any], times: int) -> None:
    await publish_with(settings.messaging, *[envelope] * times)


async def status_of(sessions: async_sessionmaker[AsyncSession], order_id: uuid.UUID) -> str:
    async with sessions() as session:
        query = select(orders.c.status).where(orders.c.id == order_id)
        return str((await session.execute(query)).scalar_one())


async def outbox_types(sessions: async_sessionmaker[AsyncSession]) -> list[str]:
    async with sessions() as session:
        # What goes out at once (nothing order-service sends now is scheduled).
        query = select(outbox.c.message_type).where(outbox.c.due_at.is_(None)).order_by(outbox.c.id)
        return list((await session.execute(query)).scalars())


async def test_payment_received_twice_moves_the_order_to_paid_exactly_once(
    kafka_settings: OrderSettings,
    engine: AsyncEngine,
    sessions: async_sessionmaker[AsyncSession],
) -> None:
    async with checkout_transaction(engine) as checkout:
        order_id = await place_order(checkout)
    worker = build_worker(kafka_settings, health_port=0)
    async with running(worker), topic_reader(kafka_settings, OrderPaid) as reader:
        await deliver(kafka_settings, payment_for(order_id, 89000), times=2)

        async def paid() -> bool:
            return await status_of(sessions, order_id) == "paid"

        await eventually(paid, within=60, what="the order to be paid")
        arrived = await read(reader, 3)
    assert await outbox_types(sessions) == ["order.created", "order.paid"]
    [order_paid] = arrived
    assert order_paid.payload.order_id == order_id
    assert order_paid.payload.total == 89000  # type: ignore[attr-defined]


async def test_payment_for_a_cancelled_order_is_recorded_as_a_refund_due_not_applied(
    kafka_settings: OrderSettings,
    engine: AsyncEngine,
    sessions: async_sessionmaker[AsyncSession],
) -> None:
    async with checkout_transaction(engine) as checkout:
        order_id = await place_order(checkout)
    await cancellation.cancel_order(SqlOrderStore(sessions), CUSTOMER, order_id)
    worker = build_worker(kafka_settings, health_port=0)
    async with running(worker):
        await deliver(kafka_settings, payment_for(order_id, 89000), times=1)

        async def recorded() -> bool:
            async with sessions() as session:
                rows = (await session.execute(select(payment_conflicts.c.action))).scalars()
                return list(rows) == ["refund_due"]

        await eventually(recorded, within=60, what="the refund to be recorded")
    assert await status_of(sessions, order_id) == "cancelled"
    assert await outbox_types(sessions) == ["order.created", "order.cancelled"]
