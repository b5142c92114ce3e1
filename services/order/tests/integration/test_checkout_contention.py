"""Checkouts racing for the same products on a real database, as in a flash sale: the product
is locked only for the checkout's last statement, so that other checkouts of it get through
while one writes its order; never a unit sold twice, never a deadlock, a key answered once,
and what is charged is the product as it was when its stock was taken."""

from __future__ import annotations

import asyncio
import itertools
import json
import uuid
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager

import asyncpg
import httpx
import pytest
from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncEngine

from shop.contracts import decode
from shop.database.driver import driver_connection
from shop.messaging.schema import outbox
from shop.order.adapters.checkout import AsyncpgCheckout, AsyncpgCheckoutStore
from shop.order.adapters.tables import idempotency_keys, orders, products
from shop.order.domain.customer import Customer
from shop.order.domain.errors import InsufficientStock, UnknownProduct
from shop.order.domain.stock import StockedProduct
from shop.order.ports import StoredAnswer
from shop.order.service_layer.checkout import place_order

from .api_helpers import Sessions, TokenFor, checkout_body, order_count, stock_of

HOT = "SERUM-RET-30"
AYU = Customer(id="cust_ayu", email="ayu@example.com")
BUDI = Customer(id="cust_budi", email="budi@example.com")


async def set_product(sessions: Sessions, sku: str, **values: object) -> None:
    async with sessions() as session, session.begin():
        await session.execute(products.update().where(products.c.sku == sku).values(**values))


async def outbox_count(sessions: Sessions, message_type: str) -> int:
    async with sessions() as session:
        query = select(func.count()).where(outbox.c.message_type == message_type)
        return int((await session.execute(query)).scalar_one())


def bearer(token_for: TokenFor, n: int) -> dict[str, str]:
    return {"Authorization": f"Bearer {token_for(f'cust_{n}', f'c{n}@example.com')}"}


async def checkout(
    client: httpx.AsyncClient, auth: dict[str, str], *lines: tuple[str, int], key: str = ""
) -> httpx.Response:
    return await client.post(
        "/v1/orders",
        json=checkout_body(*lines),
        headers={**auth, "Idempotency-Key": key or str(uuid.uuid4())},
    )


# --- many customers at once, over HTTP ------------------------------------------------------


async def test_50_customers_racing_for_the_last_20_units_buy_exactly_20(
    client: httpx.AsyncClient, token_for: TokenFor, sessions: Sessions
) -> None:
    await set_product(sessions, HOT, stock=20)

    responses = await asyncio.gather(
        *(checkout(client, bearer(token_for, n), (HOT, 1)) for n in range(50))
    )

    statuses = Counter(response.status_code for response in responses)
    assert statuses == {201: 20, 409: 30}, [r.text for r in responses if r.status_code >= 500]
    assert await stock_of(sessions, HOT) == 0
    assert await order_count(sessions) == 20
    assert await outbox_count(sessions, "order.created") == 20
    refused = next(r for r in responses if r.status_code == 409).json()
    assert (refused["sku"], refused["requested"], refused["available"]) == (HOT, 1, 0)


async def test_baskets_overlapping_in_every_order_neither_deadlock_nor_oversell(
    client: httpx.AsyncClient, token_for: TokenFor, sessions: Sessions
) -> None:
    skus = ["MASK-CLAY-100", "SERUM-RET-30", "SERUM-VITC-20"]
    for sku in skus:
        await set_product(sessions, sku, stock=12)
    # Each basket names two or three of them, in every order a client might send them.
    baskets = [
        basket
        for size in (2, 3)
        for chosen in itertools.permutations(skus, size)
        for basket in [[(sku, 1) for sku in chosen]]
    ]
    requests = [baskets[n % len(baskets)] for n in range(48)]

    responses = await asyncio.gather(
        *(checkout(client, bearer(token_for, n), *lines) for n, lines in enumerate(requests))
    )

    statuses = Counter(response.status_code for response in responses)
    unexpected = [r.text for r in responses if r.status_code not in (201, 409)]
    assert not unexpected, unexpected
    assert statuses[409] > 0, "more was asked than there was"
    sold: Counter[str] = Counter()
    for response in responses:
        if response.status_code == 201:
            for line in response.json()["lines"]:
                sold[line["sku"]] += line["quantity"]
    for sku in skus:
        left = await stock_of(sessions, sku)
        assert left >= 0
        assert sold[sku] == 12 - left, sku
    assert await order_count(sessions) == statuses[201]
    assert await outbox_count(sessions, "order.created") == statuses[201]


async def test_one_key_sent_again_and_again_among_other_checkouts_of_the_product_orders_once(
    client: httpx.AsyncClient, auth: dict[str, str], token_for: TokenFor, sessions: Sessions
) -> None:
    await set_product(sessions, HOT, stock=100)
    again = [checkout(client, auth, (HOT, 1), key="double-click") for _ in range(10)]
    others = [checkout(client, bearer(token_for, n), (HOT, 1)) for n in range(30)]

    responses = await asyncio.gather(*again, *others)

    assert {response.status_code for response in responses} == {201}
    resent = responses[:10]
    assert len({response.content for response in resent}) == 1, "the same answer, byte for byte"
    assert sum(r.headers.get("idempotent-replayed") == "true" for r in resent) == 9
    assert await order_count(sessions) == 31
    assert await outbox_count(sessions, "order.created") == 31
    assert await stock_of(sessions, HOT) == 100 - 31


async def test_units_cancelled_while_others_check_out_are_sold_again_and_never_twice(
    client: httpx.AsyncClient,
    auth: dict[str, str],
    token_for: TokenFor,
    sessions: Sessions,
) -> None:
    await set_product(sessions, HOT, stock=5)
    placed = [await checkout(client, auth, (HOT, 1)) for _ in range(5)]
    assert {response.status_code for response in placed} == {201}
    assert await stock_of(sessions, HOT) == 0

    cancels = [
        client.post(f"/v1/orders/{response.json()['id']}/cancel", headers=auth)
        for response in placed[:2]
    ]
    buys = [checkout(client, bearer(token_for, n), (HOT, 1)) for n in range(10)]
    responses = await asyncio.gather(*cancels, *buys)

    assert [response.status_code for response in responses[:2]] == [200, 200]
    bought = Counter(response.status_code for response in responses[2:])
    assert set(bought) <= {201, 409}
    assert bought[201] <= 2, "only the two units given back were there to sell"
    left = await stock_of(sessions, HOT)
    assert left == 2 - bought[201]
    for n in range(10, 10 + left):  # what is left is there to buy, and no more
        assert (await checkout(client, bearer(token_for, n), (HOT, 1))).status_code == 201
    assert (await checkout(client, bearer(token_for, 99), (HOT, 1))).status_code == 409
    assert await stock_of(sessions, HOT) == 0


# --- other transactions committing while a checkout writes its order ------------------------


Meanwhile = Callable[[], Awaitable[object]]


class TakenAfterOthersCommit(AsyncpgCheckout):
    """A checkout whose first transaction lets ``meanwhile`` run (other transactions, to
    their commit) once its order is written, right before it takes the stock."""

    def __init__(self, connection: asyncpg.Connection, store: InterruptedStore) -> None:
        super().__init__(connection)
        self.store = store

    async def take_stock(self, quantities: Mapping[str, int]) -> dict[str, StockedProduct]:
        if not self.store.interrupted:
            self.store.interrupted = True
            await self.store.meanwhile()
        return await super().take_stock(quantities)


class InterruptedStore(AsyncpgCheckoutStore):
    def __init__(self, engine: AsyncEngine, meanwhile: Meanwhile) -> None:
        super().__init__(engine)
        self.meanwhile = meanwhile
        self.interrupted = False

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[TakenAfterOthersCommit]:
        async with driver_connection(self.engine) as connection, connection.transaction():
            yield TakenAfterOthersCommit(connection, self)


async def place(
    store: AsyncpgCheckoutStore, customer: Customer, *lines: tuple[str, int]
) -> StoredAnswer:
    return await place_order(
        store, customer, list(lines), idempotency_key=str(uuid.uuid4()), request_hash="h"
    )


async def test_another_checkout_of_the_product_completes_while_one_writes_its_order(
    engine: AsyncEngine, sessions: Sessions
) -> None:
    await set_product(sessions, HOT, stock=10)

    async def budi_buys_one() -> None:
        # Waiting here for a lock that Ayu's checkout held would never end: Ayu waits for
        # this to finish. The connection's lock_timeout ends the wait, and the test.
        answer = await place(AsyncpgCheckoutStore(engine), BUDI, (HOT, 1))
        assert answer.status == 201

    answer = await place(InterruptedStore(engine, budi_buys_one), AYU, (HOT, 2))

    assert answer.status == 201
    assert await stock_of(sessions, HOT) == 10 - 1 - 2
    assert await order_count(sessions) == 2


async def test_a_checkout_holds_no_lock_on_its_products_while_it_writes_its_order(
    engine: AsyncEngine, sessions: Sessions
) -> None:
    async def locked_at_once() -> None:
        # Its order lines' foreign key too is checked only at commit (a key-share lock
        # taken now would make every row version of a hot product carry all of them).
        async with sessions() as session, session.begin():
            query = products.select().where(products.c.sku == HOT).with_for_update(nowait=True)
            await session.execute(query)

    answer = await place(InterruptedStore(engine, locked_at_once), AYU, (HOT, 1))

    assert answer.status == 201


async def test_a_price_changed_while_the_order_was_written_is_the_price_charged(
    engine: AsyncEngine, sessions: Sessions
) -> None:
    stock = await stock_of(sessions, HOT)

    async def price_goes_up() -> None:
        await set_product(sessions, HOT, price=199000, name="Retinol 0.3% Night Serum 30 ml v2")

    answer = await place(InterruptedStore(engine, price_goes_up), AYU, (HOT, 2))

    assert answer.status == 201
    placed = json.loads(answer.body)
    [line] = placed["lines"]
    assert (line["unit_price"], line["name"]) == (199000, "Retinol 0.3% Night Serum 30 ml v2")
    assert placed["total"] == 2 * 199000
    async with sessions() as session:
        [row] = (await session.execute(select(outbox.c.body))).all()
        [key] = (await session.execute(select(idempotency_keys.c.response_body))).all()
        [total] = (await session.execute(select(orders.c.total))).all()
    event = decode(row.body)
    assert [line.unit_price for line in event.payload.lines] == [199000]  # type: ignore[attr-defined]
    assert key.response_body == answer.body
    assert total.total == 2 * 199000
    assert await stock_of(sessions, HOT) == stock - 2, "taken once"


async def test_stock_sold_while_the_order_was_written_refuses_it_with_what_is_left(
    engine: AsyncEngine, sessions: Sessions
) -> None:
    await set_product(sessions, HOT, stock=2)

    async def budi_buys_one() -> None:
        assert (await place(AsyncpgCheckoutStore(engine), BUDI, (HOT, 1))).status == 201

    with pytest.raises(InsufficientStock) as refused:
        await place(InterruptedStore(engine, budi_buys_one), AYU, ("MASK-CLAY-100", 1), (HOT, 2))

    assert (refused.value.sku, refused.value.requested, refused.value.available) == (HOT, 2, 1)
    assert await stock_of(sessions, HOT) == 1
    assert await order_count(sessions) == 1, "Budi's alone: Ayu's order rolled back"
    assert await outbox_count(sessions, "order.created") == 1
    async with sessions() as session:
        keys = (await session.execute(select(idempotency_keys.c.customer_id))).scalars().all()
    assert keys == [BUDI.id], "Ayu's key is free for a retry"


async def test_a_product_withdrawn_while_the_order_was_written_is_refused(
    engine: AsyncEngine, sessions: Sessions
) -> None:
    stock = await stock_of(sessions, HOT)

    async def withdrawn() -> None:
        await set_product(sessions, HOT, active=False)

    with pytest.raises(UnknownProduct) as refused:
        await place(InterruptedStore(engine, withdrawn), AYU, (HOT, 1))

    assert refused.value.skus == [HOT]
    assert await stock_of(sessions, HOT) == stock
    assert await order_count(sessions) == 0
