"""Schemathesis against the OpenAPI document the app serves, on a real database: for every
documented operation, generated requests (valid and invalid) never get a 5xx, and every
response is one the document describes (status, media type, headers, body schema)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from datetime import timedelta

import pytest
import schemathesis
from fastapi import FastAPI
from hypothesis import HealthCheck, settings
from sqlalchemy.ext.asyncio import create_async_engine
from sqlalchemy.pool import NullPool

from shop.database import create_engine, session_factory, sqlalchemy_url
from shop.order.adapters.catalogue import seed_catalogue
from shop.order.api.app import create_app
from shop.order.bootstrap import postgres_stores
from shop.order.migrations import migrate
from shop.order.settings import OrderSettings
from shop.simulators.identity import issue_token
from shop.web.testing import CHECKS, AppUnderTest

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


@pytest.fixture(scope="module")
def app_under_test(module_database_url: str) -> Iterator[FastAPI]:
    migrate(module_database_url)
    app = app_on(module_database_url)

    async def seed() -> None:
        engine = create_engine(module_database_url, pool_size=1)
        try:
            async with session_factory(engine)() as session, session.begin():
                assert await seed_catalogue(session) == 12
        finally:
            await engine.dispose()

    asyncio.run(seed())
    APP.target = app
    try:
        yield app
    finally:
        APP.target = APP.document_only


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
