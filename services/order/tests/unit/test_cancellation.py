"""Cancelling through the use case, on fakes: the stock goes back, OrderCancelled goes out,
and only the customer's own pending order can be cancelled."""

from __future__ import annotations

import uuid

import pytest
import structlog

from shop.contracts import OrderCancelled, OrderCreated
from shop.order.domain.customer import Customer
from shop.order.domain.errors import InvalidTransition, OrderNotFound
from shop.order.domain.status import OrderStatus
from shop.order.service_layer.cancellation import (
    CUSTOMER_CANCELLED,
    PAYMENT_EXPIRED,
    cancel_order,
    cancel_unpaid,
)

from .fakes import FakeDatabase, FakeOrders

AYU = Customer(id="cust_ayu", email="ayu@example.com")
BUDI = Customer(id="cust_budi", email="budi@example.com")


async def placed(database: FakeDatabase, *lines: tuple[str, int]) -> uuid.UUID:
    return (await database.checkout(AYU, *lines)).order_id


async def test_cancelling_returns_the_stock_and_adds_order_cancelled() -> None:
    database = FakeDatabase()
    before = dict(database.state.stock)
    order_id = await placed(database, ("SERUM-RET-30", 3), ("MASK-CLAY-100", 2))

    view = await cancel_order(database.stores().orders, AYU, order_id)

    assert view.status == OrderStatus.CANCELLED
    assert database.state.stock == before
    assert database.state.orders[order_id].view.status == OrderStatus.CANCELLED
    [cancelled] = database.state.events_of(OrderCancelled)
    assert isinstance(cancelled, OrderCancelled)
    assert (cancelled.order_id, cancelled.reason) == (order_id, CUSTOMER_CANCELLED)
    assert [(line.sku, line.quantity) for line in cancelled.lines] == [
        ("SERUM-RET-30", 3),
        ("MASK-CLAY-100", 2),
    ]


async def test_a_cancelled_order_cannot_be_cancelled_again_and_returns_nothing_twice() -> None:
    database = FakeDatabase()
    before = dict(database.state.stock)
    order_id = await placed(database, ("SERUM-NIA-30", 2))
    await cancel_order(database.stores().orders, AYU, order_id)

    with pytest.raises(InvalidTransition) as refused:
        await cancel_order(database.stores().orders, AYU, order_id)

    assert refused.value.current == OrderStatus.CANCELLED
    assert database.state.stock == before
    assert len(database.state.events_of(OrderCancelled)) == 1


async def test_someone_elses_order_is_not_found_and_stays_as_it_is() -> None:
    database = FakeDatabase()
    order_id = await placed(database, ("SERUM-NIA-30", 1))

    with pytest.raises(OrderNotFound):
        await cancel_order(database.stores().orders, BUDI, order_id)

    assert database.state.orders[order_id].view.status == OrderStatus.PENDING
    assert database.state.events_of(OrderCancelled) == []


async def test_the_checkout_schedules_nothing_the_payment_window_is_payment_services() -> None:
    database = FakeDatabase()
    order_id = await placed(database, ("SERUM-NIA-30", 1))

    assert database.state.scheduled == []
    [created] = database.state.events_of(OrderCreated)
    assert isinstance(created, OrderCreated)
    assert created.order_id == order_id


async def test_an_unpaid_order_whose_payment_expired_is_cancelled_once_with_its_stock_back() -> (
    None
):
    database = FakeDatabase()
    before = dict(database.state.stock)
    order_id = await placed(database, ("SERUM-RET-30", 2))
    log = structlog.get_logger()

    first = await cancel_unpaid(FakeOrders(database), order_id, log)
    again = await cancel_unpaid(FakeOrders(database), order_id, log)

    assert (first, again) == (True, False)
    assert database.state.stock == before
    [cancelled] = database.state.events_of(OrderCancelled)
    assert isinstance(cancelled, OrderCancelled)
    assert cancelled.reason == PAYMENT_EXPIRED


async def test_a_paid_order_whose_payment_expired_is_left_paid() -> None:
    database = FakeDatabase()
    order_id = await placed(database, ("SERUM-NIA-30", 1))
    FakeOrders(database).set_status(order_id, OrderStatus.PAID)

    assert await cancel_unpaid(FakeOrders(database), order_id, structlog.get_logger()) is False

    assert database.state.orders[order_id].view.status == OrderStatus.PAID
    assert database.state.events_of(OrderCancelled) == []
