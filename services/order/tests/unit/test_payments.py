"""A payment arriving: the conflict rule as a pure function, and ``mark paid`` through the
worker's handler on fakes (pending → paid with OrderPaid; anything else recorded, never
forced; a payment for no known order is a dead letter)."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

import pytest
import structlog
from structlog.testing import capture_logs

from shop.contracts import Contract, OrderPaid, PaymentReceived, wrap
from shop.messaging import MessageContext, PermanentError
from shop.order.domain.customer import Customer
from shop.order.domain.orders import OrderView
from shop.order.domain.payments import PaymentConflict, payment_conflict
from shop.order.domain.status import OrderStatus
from shop.order.handlers import build_router
from shop.order.service_layer.cancellation import cancel_order

from .fakes import FakeDatabase

AYU = Customer(id="cust_ayu", email="ayu@example.com")
NOW = datetime(2026, 12, 3, 9, 30, tzinfo=UTC)


def order(status: OrderStatus, total: int = 89000, currency: str = "IDR") -> OrderView:
    return OrderView(
        id=uuid.uuid4(),
        number="SK-7KQ4-M2XD",
        status=status,
        lines=[],
        total=total,
        currency=currency,
        created_at=NOW,
    )


@pytest.mark.parametrize(
    ("status", "amount", "currency", "conflict"),
    [
        (OrderStatus.PENDING, 89000, "IDR", None),
        (OrderStatus.PENDING, 88000, "IDR", PaymentConflict.AMOUNT_MISMATCH),
        (OrderStatus.PENDING, 89000, "SGD", PaymentConflict.AMOUNT_MISMATCH),
        (OrderStatus.PAID, 89000, "IDR", PaymentConflict.DUPLICATE_PAYMENT),
        (OrderStatus.FULFILLED, 89000, "IDR", PaymentConflict.DUPLICATE_PAYMENT),
        (OrderStatus.CANCELLED, 89000, "IDR", PaymentConflict.REFUND_DUE),
        (OrderStatus.CANCELLED, 1, "IDR", PaymentConflict.REFUND_DUE),
    ],
)
def test_only_a_pending_order_paid_its_total_in_its_currency_is_settled(
    status: OrderStatus, amount: int, currency: str, conflict: PaymentConflict | None
) -> None:
    assert payment_conflict(order(status), amount=amount, currency=currency) == conflict


def payment(order_id: uuid.UUID, amount: int = 89000) -> PaymentReceived:
    return PaymentReceived(
        payment_id=uuid.uuid4(),
        order_id=order_id,
        provider_event_id="evt_1",
        amount=amount,
        currency="IDR",
        paid_at=NOW,
    )


async def handle(database: FakeDatabase, event: Contract) -> None:
    """What the worker does with a delivered event (PaymentReceived and the others it
    consumes), once decoded."""
    subscriber = build_router(database.stores().orders).for_type(event.message_type)
    assert subscriber is not None
    ctx = MessageContext(
        wrap(event, key=str(getattr(event, "order_id", ""))),
        "order-service:test",
        1,
        None,
        structlog.get_logger(),
    )
    await subscriber.handler(event, ctx)


async def placed(database: FakeDatabase) -> uuid.UUID:
    return (await database.checkout(AYU, ("SERUM-NIA-30", 1))).order_id


async def test_a_pending_order_paid_in_full_becomes_paid_with_order_paid() -> None:
    database = FakeDatabase()
    order_id = await placed(database)
    received = payment(order_id)

    await handle(database, received)

    assert database.state.orders[order_id].view.status == OrderStatus.PAID
    [paid] = database.state.events_of(OrderPaid)
    assert isinstance(paid, OrderPaid)
    assert (paid.order_id, paid.total, paid.payment_id, paid.payment_reference) == (
        order_id,
        89000,
        received.payment_id,
        "evt_1",
    )
    assert database.state.conflicts == []


async def test_a_second_payment_is_recorded_as_a_duplicate_and_emits_nothing_more() -> None:
    database = FakeDatabase()
    order_id = await placed(database)
    await handle(database, payment(order_id))

    with capture_logs() as logs:
        await handle(database, payment(order_id))

    assert [c.conflict for c in database.state.conflicts] == [PaymentConflict.DUPLICATE_PAYMENT]
    assert len(database.state.events_of(OrderPaid)) == 1
    assert [(log["log_level"], log["action"]) for log in logs if "action" in log] == [
        ("warning", "duplicate_payment")
    ]


async def test_a_payment_for_a_cancelled_order_is_a_refund_due_and_the_order_stays_cancelled() -> (
    None
):
    database = FakeDatabase()
    order_id = await placed(database)
    await cancel_order(database.stores().orders, AYU, order_id)

    await handle(database, payment(order_id))

    [conflict] = database.state.conflicts
    assert (conflict.conflict, conflict.order_status) == (
        PaymentConflict.REFUND_DUE,
        OrderStatus.CANCELLED,
    )
    assert database.state.orders[order_id].view.status == OrderStatus.CANCELLED
    assert database.state.events_of(OrderPaid) == []


async def test_a_payment_of_another_amount_leaves_the_order_pending() -> None:
    database = FakeDatabase()
    order_id = await placed(database)

    await handle(database, payment(order_id, amount=1000))

    assert [c.conflict for c in database.state.conflicts] == [PaymentConflict.AMOUNT_MISMATCH]
    assert database.state.orders[order_id].view.status == OrderStatus.PENDING
    assert database.state.events_of(OrderPaid) == []


async def test_a_payment_for_no_known_order_is_permanent() -> None:
    database = FakeDatabase()
    unknown = uuid.uuid4()

    with pytest.raises(PermanentError, match=f"names no known order {unknown}"):
        await handle(database, payment(unknown))
