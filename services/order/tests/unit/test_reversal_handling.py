"""What the worker does with PaymentExpired, PaymentReversed and the retired
CancelUnpaidOrder, through its handlers on fakes."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

import pytest
from structlog.testing import capture_logs

from shop.contracts import (
    CancelUnpaidOrder,
    OrderCancelled,
    OrderPaymentReversed,
    PaymentExpired,
    PaymentReversed,
    ReversalKind,
)
from shop.messaging import PermanentError, TransientError
from shop.order.domain.customer import Customer
from shop.order.domain.payments import PaymentConflict
from shop.order.domain.status import OrderStatus
from shop.order.service_layer.cancellation import PAYMENT_EXPIRED, cancel_order

from .fakes import FakeDatabase
from .test_payments import handle, payment

AYU = Customer(id="cust_ayu", email="ayu@example.com")
NOW = datetime(2026, 12, 4, 9, 30, tzinfo=UTC)
TOTAL = 89000


async def placed(database: FakeDatabase) -> uuid.UUID:
    answer = await database.checkout(AYU, ("SERUM-NIA-30", 1), key=str(uuid.uuid4()))
    return answer.order_id


async def paid(database: FakeDatabase) -> uuid.UUID:
    order_id = await placed(database)
    await handle(database, payment(order_id))
    return order_id


def reversal(
    order_id: uuid.UUID,
    *,
    kind: ReversalKind = ReversalKind.REFUND,
    reference: str = "rf_1",
    amount: int = TOTAL,
    reversed_total: int | None = None,
) -> PaymentReversed:
    return PaymentReversed(
        payment_id=uuid.uuid4(),
        order_id=order_id,
        kind=kind,
        reference=reference,
        amount=amount,
        reversed_total=amount if reversed_total is None else reversed_total,
        paid_amount=TOTAL,
        currency="IDR",
        reason="customer asked",
        reversed_at=NOW,
    )


def expired(order_id: uuid.UUID) -> PaymentExpired:
    return PaymentExpired(payment_id=uuid.uuid4(), order_id=order_id, expired_at=NOW)


def status_of(database: FakeDatabase, order_id: uuid.UUID) -> OrderStatus:
    return database.state.orders[order_id].view.status


async def test_an_expired_payment_cancels_a_pending_order_once_with_its_stock_back() -> None:
    database = FakeDatabase()
    before = dict(database.state.stock)
    order_id = await placed(database)

    await handle(database, expired(order_id))
    await handle(database, expired(order_id))

    assert status_of(database, order_id) == OrderStatus.CANCELLED
    assert database.state.stock == before
    [cancelled] = database.state.events_of(OrderCancelled)
    assert isinstance(cancelled, OrderCancelled)
    assert cancelled.reason == PAYMENT_EXPIRED


async def test_an_expired_payment_leaves_a_paid_order_paid_and_logs_it() -> None:
    database = FakeDatabase()
    order_id = await paid(database)

    with capture_logs() as logs:
        await handle(database, expired(order_id))

    assert status_of(database, order_id) == OrderStatus.PAID
    assert database.state.events_of(OrderCancelled) == []
    assert any(log["event"] == "payment expired; order left as it is" for log in logs)


async def test_an_expired_payment_for_no_known_order_is_permanent() -> None:
    with pytest.raises(PermanentError, match="names no known order"):
        await handle(FakeDatabase(), expired(uuid.uuid4()))


@pytest.mark.parametrize(
    ("kind", "amount", "status"),
    [
        (ReversalKind.REFUND, TOTAL, OrderStatus.REFUNDED),
        (ReversalKind.VOID, TOTAL, OrderStatus.REFUNDED),
        (ReversalKind.REFUND, 1000, OrderStatus.PARTIALLY_REFUNDED),
        (ReversalKind.CHARGEBACK, TOTAL, OrderStatus.CHARGED_BACK),
        (ReversalKind.CHARGEBACK, 1000, OrderStatus.CHARGED_BACK),
    ],
)
async def test_a_reversal_moves_a_paid_order_records_it_and_tells_of_it(
    kind: ReversalKind, amount: int, status: OrderStatus
) -> None:
    database = FakeDatabase()
    order_id = await paid(database)

    await handle(database, reversal(order_id, kind=kind, amount=amount))

    assert status_of(database, order_id) == status
    assert database.state.reversals[order_id, "rf_1"][1] == status
    [told] = database.state.events_of(OrderPaymentReversed)
    assert isinstance(told, OrderPaymentReversed)
    assert (told.order_id, told.kind, told.reference, told.amount, told.status) == (
        order_id,
        kind,
        "rf_1",
        amount,
        status,
    )


async def test_partial_refunds_add_up_to_a_refund_and_a_repeat_changes_nothing() -> None:
    database = FakeDatabase()
    order_id = await paid(database)
    first = reversal(order_id, reference="rf_1", amount=40000)
    second = reversal(order_id, reference="rf_2", amount=49000, reversed_total=TOTAL)

    await handle(database, first)
    assert status_of(database, order_id) == OrderStatus.PARTIALLY_REFUNDED
    await handle(database, second)
    await handle(database, first.model_copy(update={"payment_id": uuid.uuid4()}))
    await handle(database, second)

    assert status_of(database, order_id) == OrderStatus.REFUNDED
    assert sorted(ref for _, ref in database.state.reversals) == ["rf_1", "rf_2"]
    told = database.state.events_of(OrderPaymentReversed)
    assert [(e.reference, e.status) for e in told if isinstance(e, OrderPaymentReversed)] == [
        ("rf_1", OrderStatus.PARTIALLY_REFUNDED),
        ("rf_2", OrderStatus.REFUNDED),
    ]


async def test_a_late_payment_given_back_leaves_the_order_cancelled_and_ends_its_refund_due() -> (
    None
):
    database = FakeDatabase()
    order_id = await placed(database)
    await cancel_order(database.stores().orders, AYU, order_id)
    await handle(database, payment(order_id))

    await handle(database, reversal(order_id))

    assert status_of(database, order_id) == OrderStatus.CANCELLED
    [conflict] = database.state.conflicts
    assert conflict.conflict == PaymentConflict.REFUND_DUE
    assert (conflict.resolved_at, conflict.resolution) == (NOW, "refund rf_1")
    [told] = database.state.events_of(OrderPaymentReversed)
    assert isinstance(told, OrderPaymentReversed)
    assert told.status == OrderStatus.CANCELLED


async def test_a_late_payment_given_back_in_part_keeps_its_refund_due_open() -> None:
    database = FakeDatabase()
    order_id = await placed(database)
    await cancel_order(database.stores().orders, AYU, order_id)
    await handle(database, payment(order_id))

    await handle(database, reversal(order_id, reference="rf_1", amount=40000))
    [conflict] = database.state.conflicts
    assert (conflict.resolved_at, conflict.resolution) == (None, None)

    await handle(database, reversal(order_id, reference="rf_2", amount=49000, reversed_total=TOTAL))
    assert (conflict.resolved_at, conflict.resolution) == (NOW, "refund rf_2")


async def test_a_late_payment_given_back_before_it_is_heard_of_ends_its_refund_due_at_once() -> (
    None
):
    # PaymentReversed and PaymentReceived travel on different topics: the refund of a late
    # payment can reach the order before the payment itself does.
    database = FakeDatabase()
    order_id = await placed(database)
    await cancel_order(database.stores().orders, AYU, order_id)
    late = payment(order_id)

    await handle(database, reversal(order_id).model_copy(update={"payment_id": late.payment_id}))
    await handle(database, late)

    assert status_of(database, order_id) == OrderStatus.CANCELLED
    [conflict] = database.state.conflicts
    assert conflict.conflict == PaymentConflict.REFUND_DUE
    assert (conflict.resolved_at, conflict.resolution) == (NOW, "refund rf_1")


async def test_a_reversal_of_a_final_order_is_kept_and_the_order_stays() -> None:
    database = FakeDatabase()
    order_id = await paid(database)
    await handle(database, reversal(order_id, reference="rf_1"))

    await handle(database, reversal(order_id, kind=ReversalKind.CHARGEBACK, reference="cb_1"))

    assert status_of(database, order_id) == OrderStatus.REFUNDED
    assert (order_id, "cb_1") in database.state.reversals
    assert len(database.state.events_of(OrderPaymentReversed)) == 1


async def test_a_reversal_for_a_pending_order_waits_for_its_payment_or_expiry() -> None:
    database = FakeDatabase()
    order_id = await placed(database)

    with pytest.raises(TransientError, match=f"{order_id}, which is pending: waiting"):
        await handle(database, reversal(order_id))

    assert status_of(database, order_id) == OrderStatus.PENDING
    assert database.state.reversals == {}


async def test_a_reversal_for_no_known_order_is_permanent() -> None:
    with pytest.raises(PermanentError, match="names no known order"):
        await handle(FakeDatabase(), reversal(uuid.uuid4()))


async def test_a_retired_cancel_unpaid_order_is_acknowledged_and_does_nothing() -> None:
    database = FakeDatabase()
    order_id = await placed(database)

    with capture_logs() as logs:
        await handle(database, CancelUnpaidOrder(order_id=order_id))

    assert status_of(database, order_id) == OrderStatus.PENDING
    assert database.state.events_of(OrderCancelled) == []
    assert any("payment-service" in log["event"] for log in logs)
