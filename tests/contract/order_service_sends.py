"""What order-service sends, each message made by its own code on in-memory ports: the
checkout's use case places an order; its worker's handlers, run through the pipeline, mark
it paid when a payment arrives and cancel it when the deadline its checkout scheduled comes
due. Nothing here builds an event; it only supplies what arrives from outside."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

from pact.types import Message

from shop.contracts import (
    CancelUnpaidOrder,
    OrderCancelled,
    OrderCreated,
    OrderPaid,
    PaymentReceived,
    encode,
    wrap,
)
from shop.order.domain.customer import Customer
from shop.order.handlers import build_router
from shop.order.service_layer.checkout import place_order

from .delivery import deliver
from .messages import ORDER_CANCELLED_UNPAID, ORDER_PAID, ORDER_PLACED
from .order_fakes import FakeCheckoutStore, FakeOrderStore, OrderBook

CUSTOMER = Customer(id="cust_ayu", email="ayu@example.com")


async def messages() -> dict[str, Message]:
    """Each message order-service's consumers state, by its name in the pacts."""
    return {
        ORDER_PLACED: (await an_order_placed()).outbox.the_one(OrderCreated).as_pact_message(),
        ORDER_PAID: await a_pending_order_paid(),
        ORDER_CANCELLED_UNPAID: await an_order_cancelled_unpaid(),
    }


async def an_order_placed() -> OrderBook:
    """A checkout of two products, as the API runs it."""
    book = OrderBook()
    await place_order(
        FakeCheckoutStore(book),
        CUSTOMER,
        [("SERUM-NIA-30", 2), ("SUN-SPF50-50", 1)],
        idempotency_key="checkout-1",
        request_hash="hash-1",
        payment_window=timedelta(minutes=30),
    )
    return book


async def a_pending_order_paid() -> Message:
    book = await an_order_placed()
    order = book.outbox.the_event(OrderCreated)
    payment = PaymentReceived(
        payment_id=uuid.uuid4(),
        order_id=order.order_id,
        provider_event_id="evt_9d2f",
        amount=order.total,
        currency=order.currency,
        paid_at=datetime.now(UTC),
    )
    await deliver(
        build_router(FakeOrderStore(book)), encode(wrap(payment, key=str(order.order_id)))
    )
    return book.outbox.the_one(OrderPaid).as_pact_message()


async def an_order_cancelled_unpaid() -> Message:
    book = await an_order_placed()
    # The deadline the checkout scheduled, as the relay sends it once due.
    deadline = book.outbox.the_one(CancelUnpaidOrder)
    await deliver(build_router(FakeOrderStore(book)), deadline.body)
    return book.outbox.the_one(OrderCancelled).as_pact_message()
