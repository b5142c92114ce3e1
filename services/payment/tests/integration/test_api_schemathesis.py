"""Schemathesis against the OpenAPI document payment-service serves, on a real database: for
every documented operation, generated requests (valid and invalid) never get a 5xx, and
every response is one the document describes."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import schemathesis
from fastapi import FastAPI
from hypothesis import HealthCheck, settings
from sqlalchemy.ext.asyncio import create_async_engine
from sqlalchemy.pool import NullPool

from shop.database import sqlalchemy_url
from shop.payment.adapters.webhook_events import AsyncpgWebhookStore
from shop.payment.api.app import create_app
from shop.payment.migrations import migrate
from shop.payment.settings import PaymentSettings
from shop.web.testing import CHECKS, AppUnderTest


def app_on(database_url: str) -> FastAPI:
    """The real app on ``database_url``. Schemathesis calls it from its own event loop
    thread, so the engine keeps no pooled connections bound to any one loop."""
    engine = create_async_engine(sqlalchemy_url(database_url), poolclass=NullPool)
    settings = PaymentSettings(environment="test", database_url=database_url, log_json=False)
    return create_app(settings, AsyncpgWebhookStore(engine))


APP = AppUnderTest(app_on("postgresql://nobody@127.0.0.1:9/no-database"))
schema = schemathesis.openapi.from_asgi("/openapi.json", APP)


@pytest.fixture(scope="module")
def app_under_test(module_database_url: str) -> Iterator[FastAPI]:
    migrate(module_database_url)
    app = app_on(module_database_url)
    APP.target = app
    try:
        yield app
    finally:
        APP.target = APP.document_only


@schema.parametrize()
@settings(
    max_examples=40,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
def test_no_input_gets_a_server_error_and_every_answer_is_documented(
    case: schemathesis.Case, app_under_test: FastAPI
) -> None:
    case.call_and_validate(checks=CHECKS)


def test_the_document_lists_both_webhooks_with_examples_and_problem_documents() -> None:
    document = APP.document_only.openapi()
    assert set(document["paths"]) == {"/v1/payments/webhook", "/v1/payments/webhooks/midtrans"}
    for item in document["paths"].values():
        operation = item["post"]
        body = operation["requestBody"]["content"]["application/json"]["schema"]
        assert body["examples"], "each webhook documents its body with an example"
        for status, response in operation["responses"].items():
            if status.startswith(("4", "5")):
                assert list(response["content"]) == ["application/problem+json"]
        assert {"401", "413", "422"} <= set(operation["responses"])
