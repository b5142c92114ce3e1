"""order-service's internal API (the operators' reads on its worker's port) on a real
database, served as the worker serves it: an order by id or number with its outbox
messages, a search, the outbox's status; the operator token required; a bad query is a
400 that says what is wrong, an unknown order a 404."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator

import httpx
import pytest

from shop.database import create_engine, session_factory
from shop.database.driver import connection_lost
from shop.devstack.ports import free_port
from shop.messaging.internal import CUSTOMER_ORDERS_PATH, FORGET_CUSTOMER_PATH
from shop.messaging.testing import operator_port
from shop.order.internal import internal_routes

from .api_helpers import Sessions, place

TOKEN = "an-operator-token-of-this-test-long-enough"


@pytest.fixture
async def internal(sessions: Sessions) -> AsyncIterator[httpx.AsyncClient]:
    headers = {"Authorization": f"Bearer {TOKEN}"}
    async with (
        operator_port(internal_routes(sessions), token=TOKEN) as url,
        httpx.AsyncClient(base_url=url, headers=headers) as client,
    ):
        yield client


async def test_an_order_is_read_by_id_or_number_with_its_outbox_messages(
    client: httpx.AsyncClient, auth: dict[str, str], internal: httpx.AsyncClient
) -> None:
    placed = await place(client, auth, ("CLEANSER-GEL-150", 1))

    by_id = await internal.get(f"/internal/v1/orders/{placed['id']}")
    by_number = await internal.get(f"/internal/v1/orders/{placed['number'].lower()}")
    messages = await internal.get("/internal/v1/outbox/messages", params={"key": placed["id"]})

    assert by_id.status_code == by_number.status_code == 200
    assert by_id.json() == by_number.json()
    order = by_id.json()["order"]
    assert (order["id"], order["number"], order["status"]) == (
        placed["id"],
        placed["number"],
        "pending",
    )
    assert by_id.json()["payment_conflicts"] == []
    [created] = messages.json()["messages"]
    assert created["message_type"] == "order.created"
    assert created["published_at"] is None


async def test_orders_are_searched_by_number_and_listed_by_ids(
    client: httpx.AsyncClient, auth: dict[str, str], internal: httpx.AsyncClient
) -> None:
    first = await place(client, auth, ("CLEANSER-GEL-150", 1))
    second = await place(client, auth, ("CLEANSER-GEL-150", 1))

    newest = (await internal.get("/internal/v1/orders", params={"limit": "1"})).json()
    found = (await internal.get("/internal/v1/orders", params={"q": first["number"]})).json()
    listed = await internal.get(
        "/internal/v1/orders", params={"ids": f"{first['id']},{second['id']}"}
    )

    assert [o["id"] for o in newest["orders"]] == [second["id"]]
    assert [o["id"] for o in found["orders"]] == [first["id"]]
    assert {o["id"] for o in listed.json()["orders"]} == {first["id"], second["id"]}


async def test_the_outbox_status_counts_what_waits_for_the_relay(
    client: httpx.AsyncClient, auth: dict[str, str], internal: httpx.AsyncClient
) -> None:
    await place(client, auth, ("CLEANSER-GEL-150", 1))
    status = (await internal.get("/internal/v1/outbox")).json()
    assert status["unsent"] >= 1
    assert status["oldest_unsent_age_seconds"] >= 0
    assert set(status) == {"unsent", "oldest_unsent_age_seconds", "scheduled", "sent_kept"}


async def test_the_inbox_answers_which_messages_were_handled(
    internal: httpx.AsyncClient,
) -> None:
    reply = await internal.get("/internal/v1/inbox", params={"event_ids": str(uuid.uuid4())})
    assert (reply.status_code, reply.json()) == (200, {"handled": []})


@pytest.mark.parametrize(
    ("path", "params", "named"),
    [
        ("/internal/v1/orders", {"limit": "many"}, "limit"),
        ("/internal/v1/orders", {"limit": "0"}, "limit"),
        ("/internal/v1/orders", {"ids": "not-a-uuid"}, "ids"),
        (
            "/internal/v1/orders",
            {"ids": ",".join(["00000000-0000-0000-0000-000000000000"] * 201)},
            "at most",
        ),
        ("/internal/v1/outbox/messages", {}, "key is required"),
        ("/internal/v1/inbox", {"event_ids": "x"}, "event_ids"),
        ("/internal/v1/orders/" + "X" * 101, {}, "order"),
    ],
)
async def test_a_query_that_cannot_be_read_is_a_400_naming_the_parameter(
    internal: httpx.AsyncClient, path: str, params: dict[str, str], named: str
) -> None:
    reply = await internal.get(path, params=params)
    assert reply.status_code == 400
    assert named in reply.json()["detail"]


async def test_an_unknown_order_is_a_404_that_names_it(internal: httpx.AsyncClient) -> None:
    reply = await internal.get("/internal/v1/orders/SK-NOPE")
    assert reply.status_code == 404
    assert "SK-NOPE" in reply.json()["detail"]


async def test_without_the_operator_token_every_internal_route_is_refused(
    sessions: Sessions,
) -> None:
    async with (
        operator_port(internal_routes(sessions), token=TOKEN) as url,
        httpx.AsyncClient(base_url=url) as anonymous,
    ):
        for path in ("/internal/v1/orders", "/internal/v1/outbox"):
            reply = await anonymous.get(path)
            assert reply.status_code == 401
            assert "Bearer" in reply.json()["detail"]


def closed_port() -> int:
    return free_port()


async def test_a_database_that_cannot_be_reached_is_a_json_503_to_ask_again() -> None:
    # As the worker serves its routes: with its outage, the database's connection lost.
    engine = create_engine(f"postgresql://shop:shop@127.0.0.1:{closed_port()}/order", pool_size=1)
    headers = {"Authorization": f"Bearer {TOKEN}"}
    try:
        async with (
            operator_port(
                internal_routes(session_factory(engine)), token=TOKEN, outage=connection_lost
            ) as url,
            httpx.AsyncClient(base_url=url, headers=headers) as client,
        ):
            reply = await client.get("/internal/v1/outbox")
    finally:
        await engine.dispose()

    assert reply.status_code == 503, reply.text
    assert reply.headers["Retry-After"] == "1"
    assert reply.headers["Content-Type"].startswith("application/problem+json")
    assert "the database could not be reached" in reply.json()["detail"]


async def test_a_customer_is_listed_and_forgotten_with_the_address_in_the_body_never_the_url(
    client: httpx.AsyncClient, auth: dict[str, str], internal: httpx.AsyncClient
) -> None:
    # An address in a URL ends up in every access log and proxy on the way.
    placed = await place(client, auth, ("CLEANSER-GEL-150", 1))

    listed = await internal.post(CUSTOMER_ORDERS_PATH, json={"email": "ayu@example.com"})
    forgotten = await internal.post(
        FORGET_CUSTOMER_PATH, json={"email": "Ayu@Example.com", "order_ids": placed["id"]}
    )
    in_the_url = await internal.post(FORGET_CUSTOMER_PATH, params={"email": "ayu@example.com"})

    assert listed.status_code == 200, listed.text
    assert listed.json() == {"order_ids": [placed["id"]]}
    assert forgotten.status_code == 200, forgotten.text
    assert forgotten.json() == {
        "changed": {"orders": 1, "outbox_messages": 1, "idempotency_keys": 1, "dead_letters": 0},
        "remaining_order_ids": [],
    }
    assert in_the_url.status_code == 400, in_the_url.text
    assert "in the JSON body" in in_the_url.json()["detail"]


@pytest.mark.parametrize(
    ("body", "named"),
    [
        (b"not json", "JSON object"),
        (b'["ayu@example.com"]', "JSON object"),
        (b'{"email": ["ayu@example.com"]}', "email must be a string"),
    ],
)
async def test_a_body_that_cannot_be_read_is_a_400_that_says_why(
    internal: httpx.AsyncClient, body: bytes, named: str
) -> None:
    reply = await internal.post(
        FORGET_CUSTOMER_PATH, content=body, headers={"Content-Type": "application/json"}
    )
    assert reply.status_code == 400, reply.text
    assert named in reply.json()["detail"]
