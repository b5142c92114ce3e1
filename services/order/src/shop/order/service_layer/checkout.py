"""Placing an order: one transaction that claims the idempotency key, reserves stock,
records the order and adds OrderCreated to the outbox. Nothing is published from here; the
relay publishes after the commit."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import UTC, datetime

from shop.contracts import OrderCreated, OrderLine
from shop.messaging import OutboxItem
from shop.order.domain.customer import Customer
from shop.order.domain.errors import OrderNumberTaken
from shop.order.domain.money import CURRENCY, order_total
from shop.order.domain.numbers import new_order_number
from shop.order.domain.orders import placed_order_view
from shop.order.domain.stock import check_stock
from shop.order.ports import CheckoutStore, CheckoutTransaction, StoredAnswer

NUMBER_ATTEMPTS = 3
"""Order numbers are random; on the rare collision the checkout draws again."""


async def place_order(
    store: CheckoutStore,
    customer: Customer,
    lines: Sequence[tuple[str, int]],
    *,
    idempotency_key: str,
    request_hash: str,
) -> StoredAnswer:
    """Place the order of ``lines`` (sku, quantity) for ``customer``, or replay the answer
    given to the first request with this key. Refuses the whole order (no partial
    reservation) when a line cannot be served. The payment window is payment-service's:
    it expires the payment (PaymentExpired) and the worker cancels the order then."""
    for attempt in range(1, NUMBER_ATTEMPTS + 1):
        try:
            async with store.transaction() as checkout:
                return await place_in_transaction(
                    checkout,
                    customer,
                    lines,
                    idempotency_key=idempotency_key,
                    request_hash=request_hash,
                )
        except OrderNumberTaken:
            if attempt == NUMBER_ATTEMPTS:
                raise
    raise AssertionError("unreachable: the last attempt returns or raises")


async def place_in_transaction(
    checkout: CheckoutTransaction,
    customer: Customer,
    lines: Sequence[tuple[str, int]],
    *,
    idempotency_key: str,
    request_hash: str,
) -> StoredAnswer:
    """:func:`place_order` inside a transaction the caller holds (and commits)."""
    replay = await checkout.claim_key(customer.id, idempotency_key, request_hash)
    if replay is not None:
        return replay
    wanted = dict(lines)
    stocked = await checkout.lock_products(sorted(wanted))
    check_stock(wanted, stocked)
    await checkout.take_stock(wanted)
    ordered = [
        OrderLine(sku=sku, name=stocked[sku].name, quantity=quantity, unit_price=stocked[sku].price)
        for sku, quantity in lines
    ]
    event = OrderCreated(
        order_id=uuid.uuid4(),
        order_number=new_order_number(),
        customer_id=customer.id,
        customer_email=customer.email,
        lines=ordered,
        total=order_total((line.quantity, line.unit_price) for line in ordered),
        currency=CURRENCY,
        placed_at=datetime.now(UTC),
    )
    await checkout.insert_order(event)
    key = str(event.order_id)
    await checkout.add_to_outbox(OutboxItem(event, key))
    answer = StoredAnswer(201, placed_order_view(event).model_dump_json(), event.order_id)
    await checkout.store_answer(customer.id, idempotency_key, answer)
    return answer
