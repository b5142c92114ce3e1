"""The HTTP API wired by ``bootstrap`` to fakes instead of Postgres: routes, dependencies
and problem documents work without a database."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from datetime import timedelta

import httpx
import pytest

from shop.contracts import OrderCreated
from shop.order.bootstrap import build_app
from shop.order.domain.status import OrderStatus
from shop.order.service_layer.checkout import ATTEMPTS
from shop.order.settings import OrderSettings
from shop.simulators.identity import issue_token

from .fakes import FakeDatabase, ShopState

SETTINGS = OrderSettings(environment="test", log_json=False)
BODY = {"items": [{"sku": "SERUM-NIA-30", "quantity": 2}]}


@pytest.fixture
def database() -> FakeDatabase:
    return FakeDatabase()


@pytest.fixture
async def client(database: FakeDatabase) -> AsyncIterator[httpx.AsyncClient]:
    app = build_app(SETTINGS, stores=database.stores())
    token = issue_token(
        SETTINGS.jwt_secret.get_secret_value(),
        "cust_ayu",
        "ayu@example.com",
        valid_for=timedelta(hours=1),
    )
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app),
        base_url="http://order.test",
        headers={"Authorization": f"Bearer {token}"},
    ) as client:
        yield client


async def test_a_checkout_answers_201_and_its_replay_the_same_bytes(
    client: httpx.AsyncClient, database: FakeDatabase
) -> None:
    headers = {"Idempotency-Key": "k1"}
    first = await client.post("/v1/orders", json=BODY, headers=headers)
    again = await client.post("/v1/orders", json=BODY, headers=headers)

    assert first.status_code == 201, first.text
    assert first.headers["Location"] == f"/v1/orders/{first.json()['id']}"
    assert (again.status_code, again.content) == (201, first.content)
    assert again.headers["Idempotent-Replayed"] == "true"
    assert len(database.state.events_of(OrderCreated)) == 1
    listed = (await client.get("/v1/orders")).json()
    assert [order["id"] for order in listed["orders"]] == [first.json()["id"]]


async def test_a_refusal_of_the_rules_is_a_problem_document_naming_the_sku(
    client: httpx.AsyncClient, database: FakeDatabase
) -> None:
    database.state.stock["SERUM-NIA-30"] = 1

    response = await client.post("/v1/orders", json=BODY, headers={"Idempotency-Key": "k1"})

    assert response.status_code == 409
    assert response.headers["content-type"] == "application/problem+json"
    assert (response.json()["sku"], response.json()["available"]) == ("SERUM-NIA-30", 1)
    assert database.state.outbox == []


async def test_cancelling_through_the_api_returns_the_stock(
    client: httpx.AsyncClient, database: FakeDatabase
) -> None:
    before = database.state.stock["SERUM-NIA-30"]
    placed = await client.post("/v1/orders", json=BODY, headers={"Idempotency-Key": "k1"})

    cancelled = await client.post(f"/v1/orders/{placed.json()['id']}/cancel")

    assert (cancelled.status_code, cancelled.json()["status"]) == (200, "cancelled")
    assert database.state.stock["SERUM-NIA-30"] == before
    assert (await client.get("/readyz")).json() == {"status": "ready", "database": "ok"}


async def test_the_openapi_document_names_every_order_status(client: httpx.AsyncClient) -> None:
    document = (await client.get("/openapi.json")).json()
    schemas = document["components"]["schemas"]
    status = schemas["OrderView"]["properties"]["status"]
    enum = (
        schemas[status["$ref"].rsplit("/", 1)[-1]]["enum"] if "$ref" in status else status["enum"]
    )
    assert set(enum) == {s.value for s in OrderStatus}


async def test_a_price_that_keeps_changing_during_the_checkout_is_a_409_not_a_500(
    client: httpx.AsyncClient, database: FakeDatabase
) -> None:
    def new_price(price: int) -> Callable[[ShopState], None]:
        def change(state: ShopState) -> None:
            product = state.products["SERUM-NIA-30"]
            state.products["SERUM-NIA-30"] = product.model_copy(update={"price": price})

        return change

    database.meanwhile = [new_price(90000 + n) for n in range(ATTEMPTS)]

    response = await client.post("/v1/orders", json=BODY, headers={"Idempotency-Key": "k1"})

    assert response.status_code == 409
    assert response.headers["content-type"] == "application/problem+json"
    assert response.json()["title"] == "Product changed"
    assert response.json()["skus"] == ["SERUM-NIA-30"]
    assert database.state.outbox == []
