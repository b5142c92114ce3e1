"""Placing an order: one transaction that claims the idempotency key, records the order,
adds OrderCreated to the outbox and, last, takes the stock. Nothing is published from here;
the relay publishes after the commit."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import UTC, datetime

from shop.contracts import OrderCreated, OrderLine
from shop.messaging import OutboxItem
from shop.order.domain.customer import Customer
from shop.order.domain.errors import OrderNumberTaken, ProductChanged
from shop.order.domain.money import CURRENCY, order_total
from shop.order.domain.numbers import new_order_number
from shop.order.domain.orders import placed_order_view
from shop.order.domain.stock import check_stock, check_unchanged
from shop.order.ports import CheckoutStore, CheckoutTransaction, StoredAnswer

ATTEMPTS = 3
"""Order numbers are random, and a product's price may change while a checkout writes its
order: on the rare collision or change the checkout begins again, in a new transaction."""


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
    for attempt in range(1, ATTEMPTS + 1):
        try:
            async with store.transaction() as checkout:
                return await place_in_transaction(
                    checkout,
                    customer,
                    lines,
                    idempotency_key=idempotency_key,
                    request_hash=request_hash,
                )
        except (OrderNumberTaken, ProductChanged):
            if attempt == ATTEMPTS:
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
    # Read without a lock: on a product everybody wants (a flash sale), a lock taken here
    # would make every checkout of it wait for the whole transaction of the one before.
    # What is short already is refused at once, before anything is written.
    offered = await checkout.read_products(sorted(wanted))
    check_stock(wanted, offered)
    ordered = [
        OrderLine(sku=sku, name=offered[sku].name, quantity=quantity, unit_price=offered[sku].price)
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
    # The products are locked from here to the commit only. Another checkout may have
    # taken the stock since it was read (the order is refused with what is left now, and
    # everything above rolls back), or its price or name may have changed: the order, its
    # event and the stored answer are written with those read, so a change is not charged
    # silently but the checkout begins again and charges the new price. The price charged is
    # thus the locked row's, the one in force when the stock was taken; reading it with the
    # lock instead would hold the lock while all of the above is written.
    locked = await checkout.take_stock(wanted)
    check_stock(wanted, locked)
    check_unchanged(offered, locked)
    return answer
