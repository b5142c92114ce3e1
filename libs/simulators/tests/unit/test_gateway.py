"""The development payment gateway: signatures by each format's published definition (known
values, worked out by hand from the formulas), and the notifications it sends for one
payment."""

from __future__ import annotations

import asyncio
import json
import uuid

import httpx
import pytest

from shop.simulators import gateway

PAYMENT = gateway.Payment(uuid.UUID("6f1c2a4e-8d3b-4c1a-9e2f-0a1b2c3d4e5f"), 178000, "IDR")
KEYS = gateway.SigningKeys(webhook_secret="whsec_test", midtrans_server_key="SB-Mid-server-test")


def test_the_shop_signature_is_an_hmac_sha256_of_the_time_and_the_raw_body() -> None:
    # hex HMAC-SHA256("whsec_test", "1796287800." + body)
    header = gateway.shop_signature(b'{"event_id": "evt_1"}', "whsec_test", 1796287800)

    assert header == (
        "t=1796287800,v1=b3ef03a0168124e631314164c64d6c668679a5ab136c30c1fa796db8d1611a0a"
    )


def test_the_midtrans_signature_key_is_a_sha512_of_its_four_parts() -> None:
    # hex SHA-512("ORDER-1" + "200" + "250000.00" + "key")
    assert gateway.midtrans_signature_key("ORDER-1", "200", "250000.00", "key") == (
        "c8e3c10ba3bfe77169602ed7167c2211f6c663e19ba57933b5da746101ef862b"
        "c3fd0e24bfb0c8e7aac4b4f8d9b9d5b8877b7bcbccde0d37eaba5a42d19fee98"
    )


def test_a_payment_in_the_shops_format_is_one_signed_notice_of_the_amount_due() -> None:
    [notice] = gateway.notices(PAYMENT, KEYS)

    body = json.loads(notice.body)
    assert notice.path == gateway.SHOP_WEBHOOK_PATH
    assert body["type"] == "payment.paid"
    assert body["data"] == {
        "order_id": str(PAYMENT.order_id),
        "amount": 178000,
        "currency": "IDR",
        "provider_payment_id": "pay_6f1c2a4e8d3b",
    }
    timestamp = body["created"]
    assert notice.headers[gateway.SHOP_SIGNATURE_HEADER] == gateway.shop_signature(
        notice.body, KEYS.webhook_secret, timestamp
    )
    assert notice.label == f"payment.paid {body['event_id']}"


def test_a_midtrans_payment_is_pending_then_settled_each_signed_with_its_status_code() -> None:
    pending, settled = gateway.notices(PAYMENT, KEYS, fmt=gateway.Format.MIDTRANS, amount=5)

    for notice, status, code in ((pending, "pending", "201"), (settled, "settlement", "200")):
        body = json.loads(notice.body)
        assert notice.path == gateway.MIDTRANS_WEBHOOK_PATH
        assert (body["transaction_status"], body["status_code"]) == (status, code)
        assert body["gross_amount"] == "5.00"
        assert body["signature_key"] == gateway.midtrans_signature_key(
            str(PAYMENT.order_id), code, "5.00", KEYS.midtrans_server_key
        )
    assert json.loads(pending.body)["transaction_id"] == json.loads(settled.body)["transaction_id"]


def test_a_failed_midtrans_payment_is_denied_with_the_refusal_code() -> None:
    _, denied = gateway.notices(PAYMENT, KEYS, fmt=gateway.Format.MIDTRANS, fail=True)

    assert json.loads(denied.body)["transaction_status"] == "deny"
    assert json.loads(denied.body)["status_code"] == "202"


def test_out_of_order_the_outcome_comes_first() -> None:
    shop = gateway.notices(PAYMENT, KEYS, out_of_order=True)
    midtrans = gateway.notices(PAYMENT, KEYS, fmt=gateway.Format.MIDTRANS, out_of_order=True)

    assert [json.loads(n.body)["type"] for n in shop] == ["payment.paid", "payment.failed"]
    assert json.loads(shop[1].body)["created"] < json.loads(shop[0].body)["created"]
    assert [json.loads(n.body)["transaction_status"] for n in midtrans] == [
        "settlement",
        "pending",
    ]


def test_each_notice_is_repeated_as_often_as_asked() -> None:
    sent = gateway.notices(PAYMENT, KEYS, fmt=gateway.Format.MIDTRANS, times=3)

    assert [n.label.split()[0] for n in sent] == ["pending"] * 3 + ["settlement"] * 3
    with pytest.raises(ValueError, match="at least 1"):
        gateway.notices(PAYMENT, KEYS, times=0)


async def test_a_notice_is_posted_as_it_was_signed_and_the_answer_kept() -> None:
    [notice] = gateway.notices(PAYMENT, KEYS)
    received: list[httpx.Request] = []

    def webhook(request: httpx.Request) -> httpx.Response:
        received.append(request)
        return httpx.Response(200, json={"status": "accepted", "repeat": False})

    transport = httpx.MockTransport(webhook)
    async with httpx.AsyncClient(transport=transport, base_url="http://payment.test") as client:
        answer = await gateway.post(client, notice)

    [request] = received
    assert (request.url.path, request.content) == (gateway.SHOP_WEBHOOK_PATH, notice.body)
    assert (
        request.headers[gateway.SHOP_SIGNATURE_HEADER]
        == (notice.headers[gateway.SHOP_SIGNATURE_HEADER])
    )
    assert answer == gateway.Answer(notice.label, 200, '{"status":"accepted","repeat":false}')
    assert answer.accepted


def _posted_through(failure: Exception) -> gateway.Answer:
    def refuse(request: httpx.Request) -> httpx.Response:
        raise failure

    [notice] = gateway.notices(PAYMENT, KEYS)

    async def post() -> gateway.Answer:
        transport = httpx.MockTransport(refuse)
        async with httpx.AsyncClient(transport=transport, base_url="http://payment.test") as client:
            return await gateway.post(client, notice)

    return asyncio.run(post())


def test_a_webhook_that_dies_as_it_is_reached_is_an_undelivered_answer() -> None:
    # What httpcore raises when the peer is gone the instant after connecting: it asks
    # anyio for the peer's address, and there is no socket left to ask.
    died = AttributeError("'NoneType' object has no attribute 'getpeername'")
    answer = _posted_through(died)
    assert answer.status == gateway.UNDELIVERED
    assert "getpeername" in answer.body
    assert _posted_through(httpx.ConnectError("refused")).status == gateway.UNDELIVERED


def test_any_other_attribute_error_is_not_taken_for_a_dead_webhook() -> None:
    with pytest.raises(AttributeError, match="a defect"):
        _posted_through(AttributeError("a defect"))
