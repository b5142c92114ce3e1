"""Schemathesis against the OpenAPI document the app serves, on a real database: for every
documented operation, generated requests (valid and invalid) never get a 5xx, and every
response is one the document describes (status, media type, headers, body schema). A
stateful run follows the document's links: an order placed, read, then cancelled (and
cancelled again), its list paged through, each answer checked the same way."""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Callable, Iterator
from datetime import timedelta
from typing import Any

import pytest
import schemathesis
from fastapi import FastAPI
from hypothesis import HealthCheck, Phase, settings
from hypothesis import strategies as st
from pydantic import ValidationError
from sqlalchemy.ext.asyncio import create_async_engine
from sqlalchemy.pool import NullPool

from shop.database import create_engine, session_factory, sqlalchemy_url
from shop.order.adapters.catalogue import SEED_PRODUCTS, seed_catalogue
from shop.order.adapters.tables import ALL_METADATA
from shop.order.api.app import create_app
from shop.order.api.schemas import CheckoutRequest
from shop.order.bootstrap import postgres_stores
from shop.order.migrations import migrate
from shop.order.settings import OrderSettings
from shop.simulators.identity import issue_token
from shop.web.testing import (
    CHECKS,
    STATEFUL_CHECKS,
    AppUnderTest,
    Step,
    dangling_references,
    run_statefully,
)

SECRET = "test-secret-of-the-schemathesis-run"


def settings_for(database_url: str) -> OrderSettings:
    return OrderSettings(
        environment="test",
        database_url=database_url,
        jwt_secret=SECRET,  # type: ignore[arg-type]
        log_json=False,
    )


def app_on(database_url: str) -> FastAPI:
    """The real app on ``database_url``. Schemathesis calls it from its own event loop
    thread, so the engine keeps no pooled connections bound to any one loop."""
    engine = create_async_engine(sqlalchemy_url(database_url), poolclass=NullPool)
    return create_app(settings_for(database_url), postgres_stores(engine))


APP = AppUnderTest(app_on("postgresql://nobody@127.0.0.1:9/no-database"))
schema = schemathesis.openapi.from_asgi("/openapi.json", APP)


async def restock(database_url: str) -> None:
    """No orders, and the catalogue as seeded: what a fresh database holds."""
    tables = [table for metadata in ALL_METADATA for table in metadata.sorted_tables]
    engine = create_engine(database_url, pool_size=1)
    try:
        async with session_factory(engine)() as session, session.begin():
            for table in reversed(tables):  # those that refer to others first
                await session.execute(table.delete())
            assert await seed_catalogue(session) == 12
    finally:
        await engine.dispose()


def serving(database_url: str) -> Iterator[FastAPI]:
    """The app on ``database_url``, migrated and seeded, served to schemathesis for as long
    as the fixture lasts."""
    migrate(database_url)
    asyncio.run(restock(database_url))
    app = app_on(database_url)
    previous, APP.target = APP.target, app
    try:
        yield app
    finally:
        APP.target = previous


@pytest.fixture(scope="module")
def app_under_test(module_database_url: str) -> Iterator[FastAPI]:
    yield from serving(module_database_url)


@pytest.fixture
def restocked_app_under_test(database_url: str) -> Iterator[Callable[[], None]]:
    """The app on a database of its own, and a way to put it back as seeded: each stateful
    scenario starts from the full catalogue and no orders."""
    for _ in serving(database_url):
        yield lambda: asyncio.run(restock(database_url))


def customer_token() -> str:
    return issue_token(
        SECRET,
        "cust_fuzz",
        "fuzz@example.com",
        valid_for=timedelta(hours=1),
    )


@schema.auth()
class CustomerToken:
    """A valid customer token on every call meant to carry one, so that authenticated
    operations are exercised past auth; schemathesis still leaves it out where it tests the
    missing-credentials case."""

    def get(self, case: schemathesis.Case, context: schemathesis.AuthContext) -> str:
        return customer_token()

    def set(self, case: schemathesis.Case, token: str, context: schemathesis.AuthContext) -> None:
        case.headers = case.headers or {}
        case.headers["Authorization"] = f"Bearer {token}"


CATALOGUE_SKUS = sorted(str(product["sku"]) for product in SEED_PRODUCTS)


@schema.hook
def flatmap_body(context: schemathesis.HookContext, body: Any) -> st.SearchStrategy[Any]:
    """A checkout body as generated, or (for a valid one) as a customer would send it: a few
    of the seeded products, a few of each. A generated sku is never on sale, so without
    these no checkout would get past the catalogue, and reading or cancelling the orders it
    makes would never be reached. Invalid bodies (negative cases) are left as generated."""
    if context.operation is None or context.operation.label != "POST /v1/orders":
        return st.just(body)
    try:
        CheckoutRequest.model_validate(body)
    except ValidationError:
        return st.just(body)
    lines = st.lists(
        st.tuples(st.sampled_from(CATALOGUE_SKUS), st.integers(min_value=1, max_value=3)),
        min_size=1,
        max_size=3,
        unique_by=lambda line: line[0],
    )
    basket = lines.map(lambda ls: {"items": [{"sku": s, "quantity": q} for s, q in ls]})
    return st.one_of(st.just(body), basket)


@schema.parametrize()
@settings(
    max_examples=30,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
def test_no_input_gets_a_server_error_and_every_answer_is_documented(
    case: schemathesis.Case, app_under_test: FastAPI
) -> None:
    case.call_and_validate(checks=CHECKS)


def test_the_documented_example_order_is_placed_read_and_cancelled_as_documented(
    app_under_test: FastAPI,
) -> None:
    """The success answers the fuzzing above rarely reaches (it cannot guess an order id),
    made and validated through the same schemathesis calls, with the same token."""
    token = {"Authorization": f"Bearer {customer_token()}"}
    example = app_under_test.openapi()["components"]["schemas"]["CheckoutRequest"]["examples"][0]
    place = schema["/v1/orders"]["POST"].Case(
        body=example, headers={"Idempotency-Key": "documented-example"}
    )
    placed = place.call_and_validate(headers={**token}, checks=CHECKS)
    assert placed.status_code == 201, placed.text
    order = placed.json()
    assert [line["sku"] for line in order["lines"]] == [i["sku"] for i in example["items"]]
    replayed = place.call_and_validate(headers={**token}, checks=CHECKS)
    assert (replayed.status_code, replayed.json()) == (201, order)

    read = schema["/v1/orders/{order_id}"]["GET"].Case(path_parameters={"order_id": order["id"]})
    assert read.call_and_validate(headers={**token}, checks=CHECKS).json() == order
    listed = schema["/v1/orders"]["GET"].Case(query={"limit": 100})
    assert order["id"] in {
        o["id"] for o in listed.call_and_validate(headers={**token}, checks=CHECKS).json()["orders"]
    }

    cancel = schema["/v1/orders/{order_id}/cancel"]["POST"].Case(
        path_parameters={"order_id": order["id"]}
    )
    cancelled = cancel.call_and_validate(headers={**token}, checks=CHECKS)
    assert (cancelled.status_code, cancelled.json()["status"]) == (200, "cancelled")
    refused = cancel.call_and_validate(headers={**token}, checks=CHECKS)
    assert (refused.status_code, refused.json()["status_now"]) == (409, "cancelled")


def test_a_quantity_written_with_a_fraction_is_taken_as_the_document_allows(
    app_under_test: FastAPI,
) -> None:
    """Found by the fuzzing: the document says "integer", which JSON Schema (and so
    schemathesis and client validators) takes 2.0 to be, and the checkout refused it (422).
    It is the same request as 2: the same order on a retry. 2.5 is still refused."""
    token = {"Authorization": f"Bearer {customer_token()}"}
    key = {"Idempotency-Key": "whole-number-quantity"}
    place = schema["/v1/orders"]["POST"]

    placed = place.Case(
        body={"items": [{"sku": "LIP-BALM-10", "quantity": 2.0}]}, headers=key
    ).call_and_validate(headers=token, checks=CHECKS)
    retried = place.Case(
        body={"items": [{"sku": "LIP-BALM-10", "quantity": 2}]}, headers=key
    ).call_and_validate(headers=token, checks=CHECKS)
    refused = place.Case(
        body={"items": [{"sku": "LIP-BALM-10", "quantity": 2.5}]},
        headers={"Idempotency-Key": "fractional-quantity"},
    ).call_and_validate(headers=token, checks=CHECKS)

    assert placed.status_code == 201, placed.text
    assert placed.json()["lines"][0]["quantity"] == 2
    assert (retried.status_code, retried.json()) == (201, placed.json())
    assert retried.headers["idempotent-replayed"] == ["true"]
    assert refused.status_code == 422, refused.text


READ = "GET /v1/orders/{order_id}"
CANCEL = "POST /v1/orders/{order_id}/cancel"


def test_orders_placed_read_and_cancelled_along_the_links_get_no_server_error(
    restocked_app_under_test: Callable[[], None],
) -> None:
    """Schemathesis' stateful run over the document's links: chains that start at a checkout
    or at the list of orders and go on with the id an answer gave (read the order, cancel
    it, cancel it again, read it cancelled, page through the list). Every answer passes the
    same checks as above, and one more: an order just placed is never a 404 to its links."""
    steps = run_statefully(
        schema,
        checks=STATEFUL_CHECKS,
        settings=settings(
            max_examples=25,
            stateful_step_count=8,
            deadline=None,
            database=None,
            phases=[Phase.generate],
            suppress_health_check=list(HealthCheck),
        ),
        reset=restocked_app_under_test,
    )

    linked = {(step.operation, step.status) for step in steps if step.link}
    from_checkouts = {
        (step.operation, step.status)
        for step in steps
        if step.link and step.link.startswith("POST /v1/orders -> [201]")
    }
    # The chains this test is for were walked, each call answered as the order's state says:
    # an order placed was read and cancelled through the links of its checkout's answer, and
    # an order already cancelled was refused a second cancellation.
    assert {(READ, 200), (CANCEL, 200)} <= from_checkouts, walked(steps)
    assert (CANCEL, 409) in linked, walked(steps)


def walked(steps: list[Step]) -> str:
    """The steps of a stateful run, counted: what it did, for a failure message."""
    counts = Counter((step.operation, step.status, step.link or "-") for step in steps)
    return "\n".join(f"{n:4} x {' '.join(map(str, key))}" for key, n in counts.most_common())


def test_the_document_covers_every_operation_of_the_issue() -> None:
    """The generated tests above run over what the document lists: make sure it lists them
    all, with problem documents for errors and examples."""
    document = APP.document_only.openapi()
    operations = {
        (method.upper(), path) for path, item in document["paths"].items() for method in item
    }
    assert operations == {
        ("GET", "/v1/products"),
        ("GET", "/v1/products/{sku}"),
        ("POST", "/v1/orders"),
        ("GET", "/v1/orders"),
        ("GET", "/v1/orders/{order_id}"),
        ("POST", "/v1/orders/{order_id}/cancel"),
    }
    for path, item in document["paths"].items():
        for method, operation in item.items():
            for status, response in operation["responses"].items():
                if status.startswith(("4", "5")):
                    assert list(response["content"]) == ["application/problem+json"], (
                        method,
                        path,
                        status,
                    )
    place = document["paths"]["/v1/orders"]["post"]
    assert {"400", "401", "409", "413", "415", "422"} <= set(place["responses"])
    [key] = [p for p in place["parameters"] if p["name"] == "Idempotency-Key"]
    assert key["required"] is True
    assert "HTTPValidationError" not in document["components"]["schemas"]
    assert document["components"]["schemas"]["CheckoutRequest"]["examples"]
    assert dangling_references(document) == []


def test_the_answers_link_an_order_to_reading_and_cancelling_it() -> None:
    """What the stateful run follows, and a client may too: every link names an operation
    of the document by its id, and a parameter that operation takes."""
    document = APP.document_only.openapi()
    operations = {
        operation["operationId"]: operation
        for item in document["paths"].values()
        for operation in item.values()
    }
    links = {
        (operation["operationId"], status, name): link
        for operation in operations.values()
        for status, response in operation["responses"].items()
        for name, link in response.get("links", {}).items()
    }
    for link in links.values():
        taken = {
            f"{parameter['in']}.{parameter['name']}"
            for parameter in operations[link["operationId"]]["parameters"]
        }
        assert set(link["parameters"]) <= taken, link
    assert links[("place_order", "201", "GetOrder")] == {
        "operationId": "get_order",
        "description": "Read this order",
        "parameters": {"path.order_id": "$response.body#/id"},
    }
    assert {(source, status, name) for source, status, name in links} == {
        ("place_order", "201", "GetOrder"),
        ("place_order", "201", "CancelOrder"),
        ("get_order", "200", "CancelOrder"),
        ("cancel_order", "200", "GetOrder"),
        ("cancel_order", "200", "CancelOrder"),
        ("list_orders", "200", "NextPage"),
        ("list_orders", "200", "GetNewestOrder"),
    }
