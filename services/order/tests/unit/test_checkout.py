"""The checkout's rules through its use case, on fakes: stock is taken for every line or
for none, a key answers once and replays after, a drawn order number that is taken is
drawn again, a price that changed while the order was written is charged in a fresh
attempt, and OrderCreated goes to the outbox with the order."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest

from shop.contracts import OrderCreated
from shop.order.domain.customer import Customer
from shop.order.domain.errors import (
    IdempotencyConflict,
    InsufficientStock,
    OrderNumberTaken,
    ProductChanged,
    UnknownProduct,
)
from shop.order.service_layer.checkout import ATTEMPTS

from .fakes import FakeDatabase, ShopState

AYU = Customer(id="cust_ayu", email="ayu@example.com")


async def place(
    database: FakeDatabase, *lines: tuple[str, int], key: str = "k1", request_hash: str = "h1"
) -> dict[str, object]:
    answer = await database.checkout(AYU, *lines, key=key, request_hash=request_hash)
    assert answer.status == 201
    return dict(json.loads(answer.body))


async def test_an_order_takes_its_stock_and_adds_order_created_to_the_outbox() -> None:
    database = FakeDatabase()
    stock = database.state.stock["SERUM-NIA-30"]

    order = await place(database, ("SERUM-NIA-30", 2), ("SUN-SPF50-50", 1))

    assert database.state.stock["SERUM-NIA-30"] == stock - 2
    assert order["status"] == "pending"
    assert order["total"] == 2 * 89000 + 72000
    [event] = database.state.outbox
    assert isinstance(event, OrderCreated)
    assert str(event.order_id) == order["id"]
    assert event.order_number == order["number"]
    assert [(line.sku, line.quantity) for line in event.lines] == [
        ("SERUM-NIA-30", 2),
        ("SUN-SPF50-50", 1),
    ]
    assert (event.customer_id, event.customer_email) == (AYU.id, AYU.email)


async def test_a_line_that_cannot_be_served_refuses_the_whole_order_and_changes_nothing() -> None:
    database = FakeDatabase()
    database.state.stock["SERUM-RET-30"] = 3
    before = dict(database.state.stock)

    with pytest.raises(InsufficientStock) as refused:
        await place(database, ("SERUM-NIA-30", 1), ("SERUM-RET-30", 5))

    assert (refused.value.sku, refused.value.requested, refused.value.available) == (
        "SERUM-RET-30",
        5,
        3,
    )
    assert database.state.stock == before
    assert database.state.orders == {}
    assert database.state.outbox == []
    assert database.state.keys == {}, "a refused checkout leaves its key free for a retry"


async def test_unknown_products_are_named_all_at_once() -> None:
    database = FakeDatabase()

    with pytest.raises(UnknownProduct) as refused:
        await place(database, ("NOPE-2", 1), ("SERUM-NIA-30", 1), ("NOPE-1", 1))

    assert refused.value.skus == ["NOPE-1", "NOPE-2"]
    assert database.state.outbox == []


async def test_the_same_key_and_body_replay_the_first_answer_byte_for_byte() -> None:
    database = FakeDatabase()
    first = await database.checkout(AYU, ("SERUM-NIA-30", 1))
    again = await database.checkout(AYU, ("SERUM-NIA-30", 1))

    assert (again.body, again.order_id, again.replayed) == (first.body, first.order_id, True)
    assert len(database.state.orders) == 1
    assert len(database.state.outbox) == 1


async def test_the_same_key_with_another_body_is_a_conflict_and_places_nothing() -> None:
    database = FakeDatabase()
    await place(database, ("SERUM-NIA-30", 1), key="k", request_hash="first")

    with pytest.raises(IdempotencyConflict):
        await place(database, ("SERUM-NIA-30", 2), key="k", request_hash="second")

    assert len(database.state.orders) == 1


async def test_a_taken_order_number_is_drawn_again_in_a_fresh_transaction() -> None:
    database = FakeDatabase()
    database.taken_numbers = ["SK-TAKE-N001"] * (ATTEMPTS - 1)
    stock = database.state.stock["SERUM-NIA-30"]

    await place(database, ("SERUM-NIA-30", 1))

    assert database.state.stock["SERUM-NIA-30"] == stock - 1, "reserved once, not per attempt"
    assert len(database.state.outbox) == 1


async def test_an_order_number_taken_on_every_attempt_gives_up_and_leaves_nothing() -> None:
    database = FakeDatabase()
    database.taken_numbers = ["SK-TAKE-N001"] * ATTEMPTS
    before = dict(database.state.stock)

    with pytest.raises(OrderNumberTaken):
        await place(database, ("SERUM-NIA-30", 1))

    assert database.state.stock == before
    assert database.state.outbox == []


def new_price(sku: str, price: int) -> Callable[[ShopState], None]:
    def change(state: ShopState) -> None:
        state.products[sku] = state.products[sku].model_copy(update={"price": price})

    return change


def sold(sku: str, quantity: int) -> Callable[[ShopState], None]:
    def change(state: ShopState) -> None:
        state.stock[sku] -= quantity

    return change


def withdrawn(sku: str) -> Callable[[ShopState], None]:
    def change(state: ShopState) -> None:
        del state.products[sku]

    return change


async def test_a_price_changed_while_the_order_was_written_is_charged_in_a_fresh_attempt() -> None:
    database = FakeDatabase()
    database.meanwhile = [new_price("SERUM-NIA-30", 95000)]
    stock = database.state.stock["SERUM-NIA-30"]

    order = await place(database, ("SERUM-NIA-30", 2), ("SUN-SPF50-50", 1))

    assert order["total"] == 2 * 95000 + 72000
    [event] = database.state.outbox
    assert isinstance(event, OrderCreated)
    assert [line.unit_price for line in event.lines] == [95000, 72000]
    assert database.state.stock["SERUM-NIA-30"] == stock - 2, "taken once"
    assert len(database.state.orders) == 1


async def test_stock_sold_while_the_order_was_written_refuses_it_with_what_is_left() -> None:
    database = FakeDatabase()
    database.state.stock["SERUM-RET-30"] = 3
    database.meanwhile = [sold("SERUM-RET-30", 2)]
    before = dict(database.state.stock, **{"SERUM-RET-30": 1})

    with pytest.raises(InsufficientStock) as refused:
        await place(database, ("SERUM-NIA-30", 1), ("SERUM-RET-30", 2))

    assert (refused.value.sku, refused.value.requested, refused.value.available) == (
        "SERUM-RET-30",
        2,
        1,
    )
    assert database.state.stock == before, "the other line's stock is back too"
    assert database.state.orders == {}
    assert database.state.outbox == []
    assert database.state.keys == {}


async def test_a_product_withdrawn_while_the_order_was_written_is_refused_as_unknown() -> None:
    database = FakeDatabase()
    database.meanwhile = [withdrawn("MASK-CLAY-100")]

    with pytest.raises(UnknownProduct) as refused:
        await place(database, ("MASK-CLAY-100", 1))

    assert refused.value.skus == ["MASK-CLAY-100"]
    assert database.state.orders == {}
    assert database.state.outbox == []


async def test_a_price_changing_on_every_attempt_gives_up_and_leaves_nothing() -> None:
    database = FakeDatabase()
    database.meanwhile = [new_price("SERUM-NIA-30", 90000 + n) for n in range(ATTEMPTS)]
    stock = database.state.stock["SERUM-NIA-30"]

    with pytest.raises(ProductChanged) as gave_up:
        await place(database, ("SERUM-NIA-30", 1))

    assert gave_up.value.skus == ["SERUM-NIA-30"]
    assert database.state.stock["SERUM-NIA-30"] == stock
    assert database.state.orders == {}
    assert database.state.outbox == []
