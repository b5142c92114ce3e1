"""The payment deadline on real Postgres and a real Kafka-protocol broker: an order not paid
within its window is cancelled exactly once, with two order workers running and across a
worker restart, and an order paid in time is left alone."""

from __future__ import annotations

import uuid
from datetime import timedelta

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker

from shop.contracts import OrderCancelled, decode
from shop.messaging.schema import inbox, outbox
from shop.messaging.testing import eventually, running
from shop.order.adapters.tables import products
from shop.order.bootstrap import build_worker
from shop.order.service_layer.cancellation import PAYMENT_EXPIRED
from shop.order.settings import OrderSettings

from .test_worker import checkout_transaction, deliver, payment_for, place_order, status_of

Sessions = async_sessionmaker[AsyncSession]
WINDOW = timedelta(seconds=2)


async def cancellations(sessions: Sessions) -> list[OrderCancelled]:
    async with sessions() as session:
        bodies = (await session.execute(select(outbox.c.body).order_by(outbox.c.id))).scalars()
        payloads = [decode(body).payload for body in bodies]
    return [p for p in payloads if isinstance(p, OrderCancelled)]


async def stock(sessions: Sessions) -> int:
    async with sessions() as session:
        query = select(products.c.stock).where(products.c.sku == "SERUM-NIA-30")
        return int((await session.execute(query)).scalar_one())


async def until_cancelled(sessions: Sessions, order_id: uuid.UUID) -> None:
    async def cancelled() -> bool:
        return await status_of(sessions, order_id) == "cancelled"

    await eventually(cancelled, within=60, what="the unpaid order to be cancelled")


async def test_two_workers_cancel_an_unpaid_order_once_and_return_its_stock(
    kafka_settings: OrderSettings, engine: AsyncEngine, sessions: Sessions
) -> None:
    before = await stock(sessions)
    async with checkout_transaction(engine) as checkout:
        order_id = await place_order(checkout, window=WINDOW)

    async with (
        running(build_worker(kafka_settings, health_port=0)),
        running(build_worker(kafka_settings, health_port=0)),
    ):
        await until_cancelled(sessions, order_id)

    [cancelled] = await cancellations(sessions)
    assert (cancelled.order_id, cancelled.reason) == (order_id, PAYMENT_EXPIRED)
    assert await stock(sessions) == before


async def test_the_deadline_survives_a_worker_restart(
    kafka_settings: OrderSettings, engine: AsyncEngine, sessions: Sessions
) -> None:
    async with checkout_transaction(engine) as checkout:
        # Long enough that the first worker is stopped before it is due.
        order_id = await place_order(checkout, window=timedelta(seconds=12))
    async with running(build_worker(kafka_settings, health_port=0)):
        pass  # started and stopped before the order is due
    assert await status_of(sessions, order_id) == "pending"

    async with running(build_worker(kafka_settings, health_port=0)):
        await until_cancelled(sessions, order_id)

    assert len(await cancellations(sessions)) == 1


async def test_an_order_paid_in_time_is_left_alone_when_its_window_ends(
    kafka_settings: OrderSettings, engine: AsyncEngine, sessions: Sessions
) -> None:
    async with checkout_transaction(engine) as checkout:
        # Long enough for the worker to join its group and take the payment first.
        order_id = await place_order(checkout, window=timedelta(seconds=12))

    async with running(build_worker(kafka_settings, health_port=0)):
        await deliver(kafka_settings, payment_for(order_id, 89000), times=1)

        async def paid() -> bool:
            return await status_of(sessions, order_id) == "paid"

        await eventually(paid, within=60, what="the order to be paid")

        async def deadline_handled() -> bool:
            async with sessions() as session:
                query = select(inbox.c.event_id).where(
                    inbox.c.message_type == "order.cancel_unpaid"
                )
                return (await session.execute(query)).first() is not None

        await eventually(deadline_handled, within=60, what="the deadline to be handled")
    assert await status_of(sessions, order_id) == "paid"
    assert await cancellations(sessions) == []
