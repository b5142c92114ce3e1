"""Schemathesis against the OpenAPI document payment-service serves, on a real database: for
every documented operation, generated requests (valid and invalid) never get a 5xx, and
every response is one the document describes. Unsigned, almost every request stops at the
signature (401); signed as each gateway signs, the generated notifications reach the
parsing, the rules and the database behind it."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
import schemathesis
from fastapi import FastAPI
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from pydantic import SecretStr, ValidationError
from sqlalchemy.ext.asyncio import create_async_engine
from sqlalchemy.pool import NullPool

from shop.database import sqlalchemy_url
from shop.payment.adapters.webhook_events import AsyncpgWebhookStore
from shop.payment.api.app import create_app
from shop.payment.api.schemas import MidtransNotification, ShopNotification
from shop.payment.domain import midtrans
from shop.payment.domain.notifications import MAX_AMOUNT
from shop.payment.migrations import migrate
from shop.payment.settings import DEVELOPMENT_MIDTRANS_SERVER_KEY, PaymentSettings
from shop.simulators import gateway
from shop.web.testing import CHECKS, AppUnderTest, dangling_references

from ..signing import SECRET, SERVER_KEY, sign_shop

SHOP_WEBHOOK = "POST /v1/payments/webhook"
MIDTRANS_WEBHOOK = "POST /v1/payments/webhooks/midtrans"


def app_on(database_url: str) -> FastAPI:
    """The real app on ``database_url``. Schemathesis calls it from its own event loop
    thread, so the engine keeps no pooled connections bound to any one loop."""
    engine = create_async_engine(sqlalchemy_url(database_url), poolclass=NullPool)
    settings = PaymentSettings(
        environment="test",
        database_url=database_url,
        webhook_secrets=[SecretStr(SECRET)],
        midtrans_server_key=SecretStr(SERVER_KEY),
        log_json=False,
    )
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


MIDTRANS_STATUSES = [
    "settlement",
    "capture",
    "pending",
    "deny",
    "cancel",
    "expire",
    "failure",
    "refund",
    "partial_refund",
    "chargeback",
    "partial_chargeback",
    "authorize",
]


@schema.hook
def flatmap_body(context: schemathesis.HookContext, body: Any) -> st.SearchStrategy[Any]:
    """A Midtrans notification as generated, or (for a valid one) with what Midtrans puts in
    the fields the shop reads: a UUID as the order id, a status of Midtrans' and an amount
    in Rupiah as Midtrans writes it. Generated text is never one of these, so without them
    no Midtrans notification would get past its reading to the database. The rest of the
    body, and invalid bodies (negative cases), stay as generated."""
    if context.operation is None or context.operation.label != MIDTRANS_WEBHOOK:
        return st.just(body)
    try:
        MidtransNotification.model_validate(body)
    except ValidationError:
        return st.just(body)
    # Midtrans writes "178000.00"; also any other number, the edge of the database's 64-bit
    # amounts, and a short text for an integer of a billion digits.
    amounts = st.one_of(
        st.integers(min_value=0, max_value=10**20).map(lambda n: f"{n}.00"),
        st.decimals(allow_nan=False, allow_infinity=False).map(str),
        st.sampled_from([str(2**63 - 1), str(2**63), "1e999999999"]),
    )
    realistic = st.fixed_dictionaries(
        {
            "order_id": st.uuids().map(str),
            "transaction_status": st.sampled_from(MIDTRANS_STATUSES),
            "status_code": st.sampled_from(["200", "201", "202", "407"]),
            "gross_amount": amounts,
        },
        optional={"fraud_status": st.sampled_from(["accept", "challenge", "deny"])},
    ).map(lambda fields: {**body, **fields})
    # Mostly as Midtrans writes them, so that most signed notifications reach the database.
    return st.one_of(realistic, realistic, realistic, st.just(body))


def signed(case: schemathesis.Case) -> dict[str, Any]:
    """The keyword arguments that send ``case`` signed as its gateway signs: the shop's
    format signs the body's bytes in a header, Midtrans signs some of its fields in the body
    itself. An invalid case (a negative one) goes as generated: what makes it invalid may be
    its signature; so may a body that is no JSON object, or none."""
    if case.meta is not None and case.meta.generation.mode.is_negative:
        return {}
    if not isinstance(case.body, dict):
        return {}
    if case.operation.label == SHOP_WEBHOOK:
        body = json.dumps(case.body).encode()
        return {"data": body, "headers": {"Payment-Signature": sign_shop(body)}}
    if case.operation.label == MIDTRANS_WEBHOOK:
        body = dict(case.body)
        body["signature_key"] = gateway.midtrans_signature_key(
            body["order_id"], body["status_code"], body["gross_amount"], SERVER_KEY
        )
        return {"data": json.dumps(body).encode()}
    return {}


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


@schema.parametrize()
@settings(
    max_examples=100,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
def test_no_signed_notification_gets_a_server_error_and_every_answer_is_documented(
    case: schemathesis.Case, app_under_test: FastAPI
) -> None:
    case.call_and_validate(checks=CHECKS, **signed(case))


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


def test_every_reference_in_the_document_resolves() -> None:
    """Schemathesis sent no body at all to the shop's webhook while the document named a
    ShopPaymentData schema it did not carry."""
    assert dangling_references(APP.document_only.openapi()) == []


def test_the_documented_examples_are_notifications_the_shop_takes() -> None:
    document = APP.document_only.openapi()
    bodies = {
        path: item["post"]["requestBody"]["content"]["application/json"]["schema"]["examples"]
        for path, item in document["paths"].items()
    }
    [shop_example] = bodies["/v1/payments/webhook"]
    ShopNotification.model_validate(shop_example)
    [midtrans_example] = bodies["/v1/payments/webhooks/midtrans"]
    notification = MidtransNotification.model_validate(midtrans_example)
    midtrans.verify(
        notification.signature_key,
        order_id=notification.order_id,
        status_code=notification.status_code,
        gross_amount=notification.gross_amount,
        server_key=DEVELOPMENT_MIDTRANS_SERVER_KEY,
    )


def shop_notification(**data: Any) -> dict[str, Any]:
    return {
        "event_id": f"evt_{uuid.uuid4().hex}",
        "type": "payment.paid",
        "created": int(time.time()),
        "data": {
            "order_id": str(uuid.uuid4()),
            "amount": 178000,
            "currency": "IDR",
            "provider_payment_id": "pay_81c2",
            **data,
        },
    }


def midtrans_notification(**fields: Any) -> dict[str, Any]:
    return {
        "transaction_status": "settlement",
        "transaction_id": str(uuid.uuid4()),
        "status_code": "200",
        "signature_key": "0" * 128,
        "order_id": str(uuid.uuid4()),
        "gross_amount": "178000.00",
        "currency": "IDR",
        "fraud_status": "accept",
        **fields,
    }


def send_signed(path: str, body: dict[str, Any]) -> schemathesis.Response:
    case = schema[path]["POST"].Case(body=body, media_type="application/json")
    return case.call_and_validate(checks=CHECKS, **signed(case))


@pytest.mark.parametrize("amount", [str(2**63), "99999999999999999999.00", "1e999999999"])
def test_a_midtrans_amount_beyond_any_payment_is_refused_not_a_server_error(
    amount: str, app_under_test: FastAPI
) -> None:
    """Found by the signed fuzzing: past the database's 64-bit amounts the insert failed
    (500), and "1e999999999" had the webhook build an integer of a billion digits."""
    answer = send_signed(
        "/v1/payments/webhooks/midtrans", midtrans_notification(gross_amount=amount)
    )

    assert answer.status_code == 422, answer.text
    assert f"more than {MAX_AMOUNT} Rupiah" in answer.json()["detail"]


@pytest.mark.parametrize(
    ("path", "body", "field"),
    [
        (
            "/v1/payments/webhook",
            shop_notification(provider_payment_id="pay_\x00"),
            "body.data.provider_payment_id",
        ),
        (
            "/v1/payments/webhooks/midtrans",
            midtrans_notification(transaction_id="\x00"),
            "body.transaction_id",
        ),
        (
            "/v1/payments/webhooks/midtrans",
            midtrans_notification(fraud_status="accept\n"),
            "body.fraud_status",
        ),
    ],
)
def test_signed_text_with_a_control_character_is_refused_naming_the_field(
    path: str, body: dict[str, Any], field: str, app_under_test: FastAPI
) -> None:
    """Found by the signed fuzzing: a NUL (U+0000) in an id reached the database, which
    cannot store it in text (500)."""
    answer = send_signed(path, body)

    assert answer.status_code == 422, answer.text
    assert [problem["field"] for problem in answer.json()["errors"]] == [field]


def test_a_whole_amount_written_with_a_fraction_is_taken_as_the_document_allows(
    app_under_test: FastAPI,
) -> None:
    """The document says "integer", which JSON Schema (and the fuzzing) takes 178000.0 to
    be; the shop's format takes it as 178000, and still refuses 178000.5."""
    taken = send_signed("/v1/payments/webhook", shop_notification(amount=178000.0))
    refused = send_signed("/v1/payments/webhook", shop_notification(amount=178000.5))

    assert (taken.status_code, taken.json()) == (200, {"status": "accepted", "repeat": False})
    assert refused.status_code == 422, refused.text
