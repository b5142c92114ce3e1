"""PaymentExpired and PaymentReversed on real Postgres and a real Kafka-protocol broker: an
expired payment cancels its pending order exactly once, with two order workers running, and
leaves a paid order alone; a reversal moves the order once however often it arrives, and a
late payment given back ends its refund due."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

import structlog
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker

from shop.contracts import (
    Envelope,
    OrderCancelled,
    OrderPaymentReversed,
    PaymentExpired,
    PaymentReversed,
    ReversalKind,
    decode,
    wrap,
)
from shop.messaging.schema import inbox, outbox
from shop.messaging.testing import eventually, running
from shop.order.adapters.orders import SqlOrderStore
from shop.order.adapters.tables import order_reversals, payment_conflicts, products
from shop.order.bootstrap import build_worker
from shop.order.service_layer import cancellation
from shop.order.service_layer.cancellation import PAYMENT_EXPIRED
from shop.order.settings import OrderSettings

from .test_worker import (
    CUSTOMER,
    checkout_transaction,
    deliver,
    payment_for,
    place_order,
    status_of,
)

Sessions = async_sessionmaker[AsyncSession]


def expired(order_id: uuid.UUID) -> Envelope[PaymentExpired]:
    event = PaymentExpired(payment_id=uuid.uuid4(), order_id=order_id, expired_at=datetime.now(UTC))
    return wrap(event, key=str(order_id))


def reversed_(
    order_id: uuid.UUID,
    reference: str,
    amount: int,
    total: int,
    *,
    payment_id: uuid.UUID | None = None,
) -> Envelope[PaymentReversed]:
    event = PaymentReversed(
        payment_id=payment_id or uuid.uuid4(),
        order_id=order_id,
        kind=ReversalKind.REFUND,
        reference=reference,
        amount=amount,
        reversed_total=total,
        paid_amount=89000,
        currency="IDR",
        reason="customer asked",
        reversed_at=datetime.now(UTC),
    )
    return wrap(event, key=str(order_id))


async def written(sessions: Sessions, kind: type) -> list:  # type: ignore[type-arg]
    async with sessions() as session:
        bodies = (await session.execute(select(outbox.c.body).order_by(outbox.c.id))).scalars()
        payloads = [decode(body).payload for body in bodies]
    return [p for p in payloads if isinstance(p, kind)]


async def stock(sessions: Sessions) -> int:
    async with sessions() as session:
        query = select(products.c.stock).where(products.c.sku == "SERUM-NIA-30")
        return int((await session.execute(query)).scalar_one())


async def until_status(sessions: Sessions, order_id: uuid.UUID, status: str) -> None:
    async def reached() -> bool:
        return await status_of(sessions, order_id) == status

    await eventually(reached, within=60, what=f"the order to be {status}")


async def test_two_workers_cancel_an_order_whose_payment_expired_once_and_return_its_stock(
    kafka_settings: OrderSettings, engine: AsyncEngine, sessions: Sessions
) -> None:
    before = await stock(sessions)
    async with checkout_transaction(engine) as checkout:
        order_id = await place_order(checkout)
    assert await stock(sessions) == before - 1

    async with (
        running(build_worker(kafka_settings, health_port=0)),
        running(build_worker(kafka_settings, health_port=0)),
    ):
        await deliver(kafka_settings, expired(order_id), times=1)
        await deliver(kafka_settings, expired(order_id), times=2)
        await until_status(sessions, order_id, "cancelled")

    [cancelled] = await written(sessions, OrderCancelled)
    assert (cancelled.order_id, cancelled.reason) == (order_id, PAYMENT_EXPIRED)
    assert await stock(sessions) == before


async def test_an_expired_payment_leaves_a_paid_order_paid(
    kafka_settings: OrderSettings, engine: AsyncEngine, sessions: Sessions
) -> None:
    async with checkout_transaction(engine) as checkout:
        order_id = await place_order(checkout)

    async with running(build_worker(kafka_settings, health_port=0)):
        await deliver(kafka_settings, payment_for(order_id, 89000), times=1)
        await until_status(sessions, order_id, "paid")
        await deliver(kafka_settings, expired(order_id), times=1)

        async def expiry_handled() -> bool:
            async with sessions() as session:
                query = select(inbox.c.event_id).where(
                    inbox.c.message_type == PaymentExpired.message_type
                )
                return (await session.execute(query)).first() is not None

        await eventually(expiry_handled, within=60, what="the expiry to be handled")

    assert await status_of(sessions, order_id) == "paid"
    assert await written(sessions, OrderCancelled) == []


async def test_refunds_in_part_then_in_full_move_the_order_once_each(
    kafka_settings: OrderSettings, engine: AsyncEngine, sessions: Sessions
) -> None:
    async with checkout_transaction(engine) as checkout:
        order_id = await place_order(checkout)

    async with running(build_worker(kafka_settings, health_port=0)):
        await deliver(kafka_settings, payment_for(order_id, 89000), times=1)
        await until_status(sessions, order_id, "paid")
        first = reversed_(order_id, "rf_1", 40000, 40000)
        await deliver(kafka_settings, first, times=2)
        await until_status(sessions, order_id, "partially_refunded")
        # The same reversal again in another envelope: the reference makes it one.
        await deliver(kafka_settings, reversed_(order_id, "rf_1", 40000, 40000), times=1)
        await deliver(kafka_settings, reversed_(order_id, "rf_2", 49000, 89000), times=2)
        await until_status(sessions, order_id, "refunded")

    told = await written(sessions, OrderPaymentReversed)
    assert [(e.reference, e.status) for e in told] == [
        ("rf_1", "partially_refunded"),
        ("rf_2", "refunded"),
    ]
    async with sessions() as session:
        rows = await session.execute(
            select(order_reversals.c.reference, order_reversals.c.status_after).order_by(
                order_reversals.c.reversed_total
            )
        )
        assert [tuple(row) for row in rows] == [
            ("rf_1", "partially_refunded"),
            ("rf_2", "refunded"),
        ]


async def test_a_late_payment_given_back_ends_its_refund_due_and_the_order_stays_cancelled(
    kafka_settings: OrderSettings, engine: AsyncEngine, sessions: Sessions
) -> None:
    async with checkout_transaction(engine) as checkout:
        order_id = await place_order(checkout)
    await cancellation.cancel_order(SqlOrderStore(sessions), CUSTOMER, order_id)

    async def resolution() -> str | None:
        async with sessions() as session:
            query = select(payment_conflicts.c.resolution)
            return (await session.execute(query)).scalar_one_or_none()

    async def refund_due() -> bool:
        async with sessions() as session:
            rows = (await session.execute(select(payment_conflicts.c.action))).scalars()
            return list(rows) == ["refund_due"]

    async with running(build_worker(kafka_settings, health_port=0)):
        await deliver(kafka_settings, payment_for(order_id, 89000), times=1)
        # payment-service refunds a late payment after telling of it; the two topics are
        # consumed apart, so the test waits for the first before sending the second.
        await eventually(refund_due, within=60, what="the refund due to be recorded")
        await deliver(kafka_settings, reversed_(order_id, "rf_late", 89000, 89000), times=1)

        async def resolved() -> bool:
            return await resolution() is not None

        await eventually(resolved, within=60, what="the refund due to end")

    assert await resolution() == "refund rf_late"
    assert await status_of(sessions, order_id) == "cancelled"
    [told] = await written(sessions, OrderPaymentReversed)
    assert (told.order_id, told.status) == (order_id, "cancelled")


async def test_a_late_payment_given_back_before_it_arrives_ends_its_refund_due_when_it_does(
    kafka_settings: OrderSettings, engine: AsyncEngine, sessions: Sessions
) -> None:
    async with checkout_transaction(engine) as checkout:
        order_id = await place_order(checkout)
    await cancellation.cancel_order(SqlOrderStore(sessions), CUSTOMER, order_id)
    late = payment_for(order_id, 89000)
    given_back = reversed_(order_id, "rf_first", 89000, 89000, payment_id=late.payload.payment_id)

    async def conflicts() -> list[tuple[str, str | None]]:
        async with sessions() as session:
            query = select(payment_conflicts.c.action, payment_conflicts.c.resolution)
            return [tuple(row) for row in await session.execute(query)]  # type: ignore[misc]

    async def kept() -> bool:
        async with sessions() as session:
            return (await session.execute(select(order_reversals.c.reference))).first() is not None

    async with running(build_worker(kafka_settings, health_port=0)):
        await deliver(kafka_settings, given_back, times=1)
        await eventually(kept, within=60, what="the reversal to be kept")
        await deliver(kafka_settings, late, times=1)

        async def recorded() -> bool:
            return bool(await conflicts())

        await eventually(recorded, within=60, what="the late payment to be recorded")

    assert await conflicts() == [("refund_due", "refund rf_first")]
    assert await status_of(sessions, order_id) == "cancelled"


async def test_a_late_payment_given_back_before_its_expiry_arrives_waits_for_it(
    kafka_settings: OrderSettings, engine: AsyncEngine, sessions: Sessions
) -> None:
    # payment-service expires the payment, then takes a late payment and gives it back at
    # once; PaymentExpired and PaymentReversed travel on topics consumed apart, so the
    # reversal may come to a still pending order. It waits for the expiry, not the DLQ.
    async with checkout_transaction(engine) as checkout:
        order_id = await place_order(checkout)

    worker = build_worker(kafka_settings, health_port=0)  # configures logging: before the capture
    with structlog.testing.capture_logs() as logs:
        async with running(worker):
            await deliver(kafka_settings, reversed_(order_id, "rf_early", 89000, 89000), times=1)

            async def retried() -> bool:
                # Its first try failed and was put off, and the order is still pending.
                failed = any(
                    line["event"] == "handler failed, will retry"
                    and line.get("subscriber") == "record_payment_reversal"
                    for line in logs
                )
                return failed and await status_of(sessions, order_id) == "pending"

            await eventually(retried, within=10, what="the reversal to be put off")
            await deliver(kafka_settings, expired(order_id), times=1)

            async def told() -> bool:
                return bool(await written(sessions, OrderPaymentReversed))

            await eventually(told, within=60, what="the reversal to be recorded after the expiry")

    assert await status_of(sessions, order_id) == "cancelled"
    [reversal] = await written(sessions, OrderPaymentReversed)
    assert (reversal.reference, reversal.status) == ("rf_early", "cancelled")
