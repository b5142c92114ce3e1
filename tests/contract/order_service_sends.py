"""What order-service sends, each message made by its own code on in-memory ports: the
checkout's use case places an order; its worker's handlers, run through the pipeline, mark
it paid when a payment arrives, cancel it when payment-service expires its payment, and
record a reversal of its payment. Nothing here builds an event; it only supplies what
arrives from outside."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

from pact.types import Message

from shop.contracts import (
    Contract,
    OrderCancelled,
    OrderCreated,
    OrderPaid,
    OrderPaymentReversed,
    PaymentExpired,
    PaymentReceived,
    PaymentReversed,
    ReversalKind,
    encode,
    wrap,
)
from shop.order.domain.customer import Customer
from shop.order.handlers import build_router
from shop.order.service_layer.checkout import place_order

from .delivery import deliver
from .messages import (
    ORDER_CANCELLED_UNPAID,
    ORDER_PAID,
    ORDER_PAYMENT_REFUNDED_IN_PART,
    ORDER_PLACED,
)
from .order_fakes import FakeCheckoutStore, FakeOrderStore, OrderBook

CUSTOMER = Customer(id="cust_ayu", email="ayu@example.com")


async def messages() -> dict[str, Message]:
    """Each message order-service's consumers state, by its name in the pacts."""
    return {
        ORDER_PLACED: (await an_order_placed()).outbox.the_one(OrderCreated).as_pact_message(),
        ORDER_PAID: await a_pending_order_paid(),
        ORDER_CANCELLED_UNPAID: await an_order_cancelled_unpaid(),
        ORDER_PAYMENT_REFUNDED_IN_PART: await a_paid_order_refunded_in_part(),
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
    )
    return book


async def arrives(book: OrderBook, event: Contract, order_id: uuid.UUID) -> None:
    await deliver(build_router(FakeOrderStore(book)), encode(wrap(event, key=str(order_id))))


async def a_paid_order() -> OrderBook:
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
    await arrives(book, payment, order.order_id)
    return book


async def a_pending_order_paid() -> Message:
    return (await a_paid_order()).outbox.the_one(OrderPaid).as_pact_message()


async def an_order_cancelled_unpaid() -> Message:
    book = await an_order_placed()
    order = book.outbox.the_event(OrderCreated)
    # payment-service ended the payment window with nothing paid at the gateway.
    expired = PaymentExpired(
        payment_id=uuid.uuid4(), order_id=order.order_id, expired_at=datetime.now(UTC)
    )
    await arrives(book, expired, order.order_id)
    return book.outbox.the_one(OrderCancelled).as_pact_message()


async def a_paid_order_refunded_in_part() -> Message:
    book = await a_paid_order()
    order = book.outbox.the_event(OrderCreated)
    refund = PaymentReversed(
        payment_id=uuid.uuid4(),
        order_id=order.order_id,
        kind=ReversalKind.REFUND,
        reference="rf_7c1e",
        amount=order.total // 2,
        reversed_total=order.total // 2,
        paid_amount=order.total,
        currency=order.currency,
        reason="one item returned",
        reversed_at=datetime.now(UTC),
    )
    await arrives(book, refund, order.order_id)
    return book.outbox.the_one(OrderPaymentReversed).as_pact_message()
