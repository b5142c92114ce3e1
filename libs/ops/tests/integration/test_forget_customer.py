"""Forgetting a customer end to end: the services' own databases, written by the services'
own code (a checkout, a gateway's notification as the webhook keeps it, an e-mail's record
as the notifier marks it), each service's internal API served on them as its worker serves
it, and ``shop.ops`` asking them with the operator token. Afterwards the address appears
nowhere in any of their tables, the orders keep their totals, lines and states, and the
other customer is untouched; a second run changes nothing."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

import asyncpg
import httpx
import pytest

from shop.contracts import OrderCreated, decode
from shop.database import create_engine, session_factory
from shop.messaging.deadletter_table import ERASED_FOR_PRIVACY, PostgresDeadLetterStore
from shop.messaging.deadletters import DeadLetters, StoredDeadLetter
from shop.messaging.internal import FORGET_CUSTOMER_PATH
from shop.messaging.privacy import FORGOTTEN_EMAIL
from shop.messaging.transports.memory import MemoryTransport
from shop.notification.adapters.sent_log import SqlSentLog
from shop.notification.adapters.tables import ALL_METADATA as NOTIFICATION_METADATA
from shop.notification.domain.kinds import NotificationKey, NotificationKind
from shop.ops.errors import OpsError
from shop.ops.forget import ROUNDS, forget_customer, forget_through
from shop.ops.internal import OperatorPort, operator_port
from shop.order.adapters.catalogue import seed_catalogue
from shop.order.adapters.checkout import AsyncpgCheckoutStore
from shop.order.adapters.tables import ALL_METADATA as ORDER_METADATA
from shop.order.domain.customer import Customer
from shop.order.service_layer.checkout import place_in_transaction
from shop.payment.adapters.tables import ALL_METADATA as PAYMENT_METADATA

from .conftest import create_all, reading

AYU = Customer(id="cust_ayu", email="ayu.lestari@example.com")
BUDI = Customer(id="cust_budi", email="budi@example.com")
_GATEWAY_NOTIFICATION = """
    INSERT INTO payment_events (provider, provider_event_id, type, raw_body, meaning, order_id,
                                amount, currency, provider_payment_id)
    VALUES ('midtrans', $1, 'settlement', $2, 'paid', $3, 250000, 'IDR', $4)
"""


async def place(url: str, customer: Customer, key: str) -> uuid.UUID:
    """An order as a checkout places it: the order, its lines, its idempotency key and its
    OrderCreated in the outbox."""
    engine = create_engine(url)
    try:
        async with session_factory(engine)() as session, session.begin():
            await seed_catalogue(session)
        async with AsyncpgCheckoutStore(engine).transaction() as checkout:
            answer = await place_in_transaction(
                checkout,
                customer,
                [("SERUM-NIA-30", 2), ("SUN-SPF50-50", 1)],
                idempotency_key=key,
                request_hash=key,
            )
        return answer.order_id
    finally:
        await engine.dispose()


async def seed(urls: dict[str, str]) -> dict[str, list[uuid.UUID]]:
    """Two orders of Ayu's and one of Budi's, in every service."""
    await create_all(urls["order-service"], ORDER_METADATA)
    await create_all(urls["payment-service"], PAYMENT_METADATA)
    await create_all(urls["notification-service"], NOTIFICATION_METADATA)
    placed: dict[str, list[uuid.UUID]] = {AYU.email: [], BUDI.email: []}
    for customer, key in ((AYU, "k1"), (AYU, "k2"), (BUDI, "k1")):
        placed[customer.email].append(await place(urls["order-service"], customer, key))
    for email, order_ids in placed.items():
        for order_id in order_ids:
            await paid_and_mailed(urls, order_id, email)
    return placed


async def paid_and_mailed(urls: dict[str, str], order_id: uuid.UUID, email: str) -> None:
    """The order's gateway notification kept by payment-service, its confirmation's record
    kept by notification-service, and its OrderCreated among both services' dead letters
    (a payment that could not be opened, an e-mail the provider refused)."""
    for service in ("payment-service", "notification-service"):
        await dead_lettered(urls, service, order_id)
    payments = await asyncpg.connect(urls["payment-service"])
    try:
        # A gateway's body may carry what the customer gave it.
        body = f'{{"order_id": "{order_id}", "customer_details": {{"email": "{email}"}}}}'
        await payments.execute(
            _GATEWAY_NOTIFICATION, f"evt-{order_id}", body.encode(), order_id, "pay-1"
        )
    finally:
        await payments.close()
    engine = create_engine(urls["notification-service"])
    try:
        await SqlSentLog(session_factory(engine)).mark_sent(
            NotificationKey(order_id, NotificationKind.ORDER_CONFIRMATION),
            recipient=email,
            message_id=f"<order_confirmation.{order_id}@skincare-shop.example>",
            event_id=uuid.uuid4(),
        )
    finally:
        await engine.dispose()


async def dead_lettered(urls: dict[str, str], service: str, order_id: uuid.UUID) -> None:
    """The order's OrderCreated, byte for byte as order-service published it, kept as one
    of ``service``'s dead letters."""
    orders = await asyncpg.connect(urls["order-service"])
    try:
        body = await orders.fetchval("SELECT body FROM outbox WHERE key = $1", str(order_id))
    finally:
        await orders.close()
    engine = create_engine(urls[service])
    try:
        at = datetime.now(UTC)
        letter = StoredDeadLetter(
            id="",
            group=service,
            source="shop-order-created",
            message_type="order.created",
            body=bytes(body),
            headers={"x-event-id": str(uuid.uuid4())},
            error_type="PermanentFailure",
            error_message="550 mailbox unavailable",
            attempts=1,
            first_failure_at=at,
            last_failure_at=at,
            key=str(order_id),
            transport_id=f"letter-{order_id}",
        )
        assert await PostgresDeadLetterStore(session_factory(engine)).keep([letter]) == 1
    finally:
        await engine.dispose()


async def tables_naming(url: str, email: str) -> dict[str, int]:
    """How many rows of each table of the database at ``url`` hold ``email`` (any case), in
    any column, text or bytes."""
    connection = await asyncpg.connect(url)
    try:
        tables = await connection.fetch(
            "SELECT tablename FROM pg_tables WHERE schemaname = 'public'"
        )
        found = {}
        for table in tables:
            rows = await connection.fetch(f'SELECT * FROM "{table["tablename"]}"')
            naming = sum(1 for row in rows if email.lower() in _text_of(row).lower())
            if naming:
                found[table["tablename"]] = naming
        return found
    finally:
        await connection.close()


def _text_of(row: asyncpg.Record) -> str:
    return " ".join(
        value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)
        for value in row.values()
    )


async def orders_as_kept(url: str) -> list[tuple[Any, ...]]:
    """What the shop's books need of every order: its status, total and lines."""
    connection = await asyncpg.connect(url)
    try:
        rows = await connection.fetch(
            "SELECT o.id, o.number, o.status, o.total, o.currency, "
            "array_agg((i.sku, i.name, i.quantity, i.unit_price) ORDER BY i.line_no) AS lines "
            "FROM orders o JOIN order_items i ON i.order_id = o.id GROUP BY o.id ORDER BY o.id"
        )
        return [tuple(row.values()) for row in rows]
    finally:
        await connection.close()


async def test_a_forgotten_customer_is_nowhere_in_any_service_and_the_orders_keep_their_books(
    service_databases: dict[str, str], internal_apis: dict[str, str]
) -> None:
    placed = await seed(service_databases)
    books = await orders_as_kept(service_databases["order-service"])
    for url in service_databases.values():
        assert await tables_naming(url, AYU.email), "the seeded data names her everywhere"

    # As an operator types it: the case of the address does not matter.
    forgotten = await forget_customer(reading(internal_apis), "Ayu.Lestari@EXAMPLE.com")

    assert forgotten.orders == 2
    assert forgotten.changed == {
        "payment-service": {"gateway_notifications": 2, "dead_letters": 2},
        "notification-service": {"sent_emails": 2, "dead_letters": 2},
        "order-service": {
            "orders": 2,
            "outbox_messages": 2,
            "idempotency_keys": 2,
            "dead_letters": 0,
        },
    }
    for url in service_databases.values():
        assert await tables_naming(url, AYU.email) == {}
        assert await tables_naming(url, AYU.id) == {}
    assert await orders_as_kept(service_databases["order-service"]) == books
    assert await tables_naming(service_databases["order-service"], BUDI.email) == {
        "orders": 1,
        "outbox": 1,
    }
    assert await tables_naming(service_databases["payment-service"], BUDI.email) == {
        "payment_events": 1,
        "dead_letters": 1,
    }
    assert await tables_naming(service_databases["notification-service"], BUDI.email) == {
        "order_notifications": 1,
        "dead_letters": 1,
    }
    await assert_outbox_still_valid(service_databases["order-service"], placed[AYU.email])
    for service in ("payment-service", "notification-service"):
        await assert_dead_letters_still_valid(service_databases[service], placed[AYU.email])

    again = await forget_customer(reading(internal_apis), AYU.email)

    assert again.orders == 0
    assert again.changed == {
        "payment-service": {"gateway_notifications": 0, "dead_letters": 0},
        "notification-service": {"sent_emails": 0, "dead_letters": 0},
        "order-service": {
            "orders": 0,
            "outbox_messages": 0,
            "idempotency_keys": 0,
            "dead_letters": 0,
        },
    }


async def assert_outbox_still_valid(url: str, order_ids: list[uuid.UUID]) -> None:
    """The forgotten customer's kept messages are still their contracts (an unsent one goes
    out as it is now), naming the forgotten address and an id of the order's own."""
    connection = await asyncpg.connect(url)
    try:
        bodies = await connection.fetch(
            "SELECT body FROM outbox WHERE key = ANY($1::text[]) ORDER BY id",
            [str(order_id) for order_id in order_ids],
        )
    finally:
        await connection.close()
    events = [decode(row["body"]).payload for row in bodies]
    created = [event for event in events if isinstance(event, OrderCreated)]
    assert len(created) == len(events) == len(order_ids)
    assert [(event.customer_email, event.customer_id) for event in created] == [
        (FORGOTTEN_EMAIL, f"forgotten:{order_id}") for order_id in order_ids
    ]


async def assert_dead_letters_still_valid(url: str, order_ids: list[uuid.UUID]) -> None:
    """The forgotten customer's dead letters are still their contracts (a redrive sends
    them as they are now), naming the forgotten address."""
    connection = await asyncpg.connect(url)
    try:
        bodies = await connection.fetch(
            "SELECT body FROM dead_letters WHERE key = ANY($1::text[]) ORDER BY id",
            [str(order_id) for order_id in order_ids],
        )
    finally:
        await connection.close()
    events = [decode(row["body"]).payload for row in bodies]
    assert [(type(e), e.customer_email) for e in events] == [  # type: ignore[union-attr]
        (OrderCreated, FORGOTTEN_EMAIL) for _ in order_ids
    ]


async def test_a_dead_letter_naming_them_that_is_no_contract_loses_its_body_and_its_redrive(
    service_databases: dict[str, str], internal_apis: dict[str, str]
) -> None:
    placed = await seed(service_databases)
    [order_id, _] = placed[AYU.email]
    url = service_databases["notification-service"]
    engine = create_engine(url)
    try:
        store = PostgresDeadLetterStore(session_factory(engine))
        at = datetime.now(UTC)
        unreadable = StoredDeadLetter(
            id="",
            group="notification-service",
            source="shop-order-created",
            message_type="order.created",
            # A body a foreign producer sent: it names her, as no contract does.
            body=f"to={AYU.email.upper()}; cc=budi@example.com".encode(),
            headers={},
            error_type="DecodeError",
            error_message="not JSON",
            attempts=1,
            first_failure_at=at,
            last_failure_at=at,
            key=str(order_id),
            transport_id="unreadable",
        )
        assert await store.keep([unreadable]) == 1
        await forget_customer(reading(internal_apis), AYU.email)

        [erased] = [
            x
            for x in await DeadLetters(
                store, MemoryTransport().dead_letter_courier, "notification-service"
            ).list()
            if x.transport_id == "unreadable"
        ]
        assert erased.body == b""
        assert erased.problems == (ERASED_FOR_PRIVACY,)
        assert erased.truncated, "an erased body cannot be redriven"
    finally:
        await engine.dispose()


async def test_forgetting_needs_the_operator_token(
    service_databases: dict[str, str], internal_apis: dict[str, str]
) -> None:
    without = reading(internal_apis).model_copy(update={"operator_token": None})
    with pytest.raises(OpsError, match="SHOP_OPS_OPERATOR_TOKEN"):
        await forget_customer(without, AYU.email)
    async with httpx.AsyncClient() as client:
        for service, url in internal_apis.items():
            refused = await client.post(f"{url}{FORGET_CUSTOMER_PATH}", json={"email": AYU.email})
            assert refused.status_code == 401, (service, refused.text)


async def test_what_is_not_an_address_is_refused_with_the_reason(
    service_databases: dict[str, str], internal_apis: dict[str, str]
) -> None:
    await create_all(service_databases["order-service"], ORDER_METADATA)
    with pytest.raises(OpsError, match="answered 400: email must be an e-mail address"):
        await forget_customer(reading(internal_apis), "ayu at example")


class PlacingBeforeOrderService(OperatorPort):
    """order-service's port, as a customer still shopping makes it look: an order of
    theirs is placed just before forget-customer's first step in order-service (after the
    other services were asked about the orders listed)."""

    def __init__(
        self, port: OperatorPort, urls: dict[str, str], customer: Customer, *, times: int = 1
    ) -> None:
        super().__init__(port.client, port.service, port.url)
        self.urls = urls
        self.customer = customer
        self.times = times
        self.placed: list[uuid.UUID] = []

    async def post(
        self,
        path: str,
        params: Mapping[str, str] | None = None,
        *,
        body: Mapping[str, str] | None = None,
    ) -> Any:
        if path == FORGET_CUSTOMER_PATH and len(self.placed) < self.times:
            key = f"late-{len(self.placed)}"
            self.placed.append(await place(self.urls["order-service"], self.customer, key))
            await paid_and_mailed(self.urls, self.placed[-1], self.customer.email)
        return await super().post(path, params, body=body)


async def test_an_order_placed_while_the_customer_is_forgotten_is_forgotten_too(
    service_databases: dict[str, str], internal_apis: dict[str, str]
) -> None:
    await seed(service_databases)
    settings = reading(internal_apis)

    async with (
        operator_port(settings, "order-service") as order_port,
        operator_port(settings, "payment-service") as payments,
        operator_port(settings, "notification-service") as notifications,
    ):
        orders = PlacingBeforeOrderService(order_port, service_databases, AYU)
        forgotten = await forget_through(orders, payments, notifications, AYU.email)

    assert len(orders.placed) == 1
    assert forgotten.orders == 3, "rows changed, the late order's among them"
    for url in service_databases.values():
        assert await tables_naming(url, AYU.email) == {}
    assert forgotten.changed["payment-service"] == {"gateway_notifications": 3, "dead_letters": 3}


async def test_a_customer_who_keeps_ordering_while_forgotten_is_an_error_that_says_so(
    service_databases: dict[str, str], internal_apis: dict[str, str]
) -> None:
    await seed(service_databases)
    settings = reading(internal_apis)

    async with (
        operator_port(settings, "order-service") as order_port,
        operator_port(settings, "payment-service") as payments,
        operator_port(settings, "notification-service") as notifications,
    ):
        orders = PlacingBeforeOrderService(order_port, service_databases, AYU, times=100)
        with pytest.raises(OpsError, match=r"still placed orders .* run forget-customer again"):
            await forget_through(orders, payments, notifications, AYU.email)

    assert len(orders.placed) == ROUNDS
