"""The webhooks on a real database: each valid notification is kept once with a
ProcessPayment for it, in one transaction, and answered 200 (a repeat too); anything not
proven to come from the gateway, or not understood, is refused and stores nothing."""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import httpx
import pytest
from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker
from structlog.testing import capture_logs

from shop.contracts import ProcessPayment, decode
from shop.database import create_engine
from shop.devstack.ports import free_port
from shop.messaging.schema import outbox
from shop.payment.adapters.tables import payment_events
from shop.payment.adapters.webhook_events import AsyncpgWebhookStore
from shop.payment.api.app import create_app
from shop.payment.settings import PaymentSettings

from ..signing import OLD_SECRET, SERVER_KEY, midtrans_request, shop_request, sign_shop

Sessions = async_sessionmaker[AsyncSession]
ORDER_ID = "6f1c2a4e-8d3b-4c1a-9e2f-0a1b2c3d4e5f"


def paid(event_id: str = "evt_1", *, amount: int = 178000, **data: Any) -> dict[str, Any]:
    return {
        "event_id": event_id,
        "type": "payment.paid",
        "created": int(time.time()),
        "data": {
            "order_id": ORDER_ID,
            "amount": amount,
            "currency": "IDR",
            "provider_payment_id": "pay_81c2",
            **data,
        },
    }


def settlement(status: str = "settlement", **fields: Any) -> dict[str, Any]:
    return {
        "transaction_time": "2026-12-03 16:30:00",
        "transaction_status": status,
        "transaction_id": "9aed5972-5b6a-401e-894b-a32c91ed1a3a",
        "status_code": "200" if status == "settlement" else "201",
        "payment_type": "bank_transfer",
        "order_id": ORDER_ID,
        "gross_amount": "178000.00",
        "currency": "IDR",
        **fields,
    }


async def stored(sessions: Sessions) -> list[tuple[str, str, bytes]]:
    async with sessions() as session:
        query = select(
            payment_events.c.provider, payment_events.c.provider_event_id, payment_events.c.raw_body
        ).order_by(payment_events.c.id)
        rows = await session.execute(query)
        return [(row.provider, row.provider_event_id, row.raw_body) for row in rows]


async def commands(sessions: Sessions) -> list[ProcessPayment]:
    async with sessions() as session:
        bodies = (await session.execute(select(outbox.c.body).order_by(outbox.c.id))).scalars()
        payloads = [decode(body).payload for body in bodies]
    queued = [p for p in payloads if isinstance(p, ProcessPayment)]
    assert len(queued) == len(payloads), "only ProcessPayment goes out of the intake"
    return queued


async def count_outbox(sessions: Sessions) -> int:
    async with sessions() as session:
        return int((await session.execute(select(func.count()).select_from(outbox))).scalar_one())


async def test_a_signed_notification_is_kept_byte_for_byte_with_its_process_payment(
    client: httpx.AsyncClient, sessions: Sessions
) -> None:
    request = shop_request(paid())

    response = await client.post("/v1/payments/webhook", **request)

    assert response.status_code == 200, response.text
    assert response.json() == {"status": "accepted", "repeat": False}
    assert await stored(sessions) == [("shop", "evt_1", request["content"])]
    [command] = await commands(sessions)
    assert (command.provider_event_id, command.provider) == ("evt_1", "shop")


async def test_the_same_notification_five_times_at_once_is_kept_once(
    client: httpx.AsyncClient, sessions: Sessions
) -> None:
    request = shop_request(paid())

    answers = await asyncio.gather(
        *(client.post("/v1/payments/webhook", **request) for _ in range(5))
    )

    assert [a.status_code for a in answers] == [200] * 5
    assert sorted(a.json()["repeat"] for a in answers) == [False, True, True, True, True]
    assert len(await stored(sessions)) == 1
    assert len(await commands(sessions)) == 1


async def test_a_notification_signed_with_a_secret_being_rotated_out_is_accepted(
    client: httpx.AsyncClient, sessions: Sessions
) -> None:
    response = await client.post("/v1/payments/webhook", **shop_request(paid(), secret=OLD_SECRET))

    assert response.status_code == 200, response.text
    assert len(await stored(sessions)) == 1


@pytest.mark.parametrize(
    ("signature", "reason"),
    [
        (None, "header is missing"),
        ("v1=abc", "needs one t=<unix seconds>"),
        # NOW: the time the test runs, not the time it was collected.
        ("t=NOW", "has no v1= signature"),
        (f"t=NOW,v1={'0' * 64}", "does not match the body"),
        # Bytes beyond ASCII, as a header may carry them (the server reads them as latin-1).
        ("t=²,v1=00".encode("latin-1"), "needs one t=<unix seconds>"),
        ("t=NOW,v1=é".encode("latin-1"), "does not match the body"),
    ],
)
async def test_a_missing_malformed_or_wrong_signature_is_401_and_stores_nothing(
    client: httpx.AsyncClient, sessions: Sessions, signature: str | bytes | None, reason: str
) -> None:
    request = shop_request(paid())
    now = str(int(time.time()))
    if signature is None:
        del request["headers"]["Payment-Signature"]
    elif isinstance(signature, bytes):
        request["headers"]["Payment-Signature"] = signature.replace(b"NOW", now.encode())
    else:
        request["headers"]["Payment-Signature"] = signature.replace("NOW", now)

    response = await client.post("/v1/payments/webhook", **request)

    assert response.status_code == 401
    assert response.headers["content-type"] == "application/problem+json"
    assert reason in response.json()["detail"]
    assert await stored(sessions) == []
    assert await count_outbox(sessions) == 0


async def test_a_body_changed_after_signing_is_401(
    client: httpx.AsyncClient, sessions: Sessions
) -> None:
    request = shop_request(paid(amount=1000))
    request["content"] = request["content"].replace(b"1000", b"1")

    response = await client.post("/v1/payments/webhook", **request)

    assert response.status_code == 401
    assert await stored(sessions) == []


@pytest.mark.parametrize("offset", [-301, +301])
async def test_a_replayed_or_future_timestamp_is_401_naming_the_tolerance(
    client: httpx.AsyncClient, sessions: Sessions, offset: int
) -> None:
    request = shop_request(paid(), at=time.time() + offset)

    response = await client.post("/v1/payments/webhook", **request)

    assert response.status_code == 401
    assert "300 s allowed" in response.json()["detail"]
    assert await stored(sessions) == []


@pytest.mark.parametrize(
    ("payload", "field"),
    [
        ({**paid(), "type": "payment.disputed"}, "body.type"),
        ({k: v for k, v in paid().items() if k != "data"}, "body.data"),
        (paid(amount=-1), "body.data.amount"),
        (paid(order_id="not-an-order"), "body.data.order_id"),
    ],
)
async def test_a_signed_notification_the_shop_cannot_read_is_422_naming_the_field(
    client: httpx.AsyncClient, sessions: Sessions, payload: dict[str, Any], field: str
) -> None:
    response = await client.post("/v1/payments/webhook", **shop_request(payload))

    assert response.status_code == 422, response.text
    assert field in {e["field"] for e in response.json()["errors"]}
    assert await stored(sessions) == []


async def test_signed_text_that_is_not_json_is_422_and_stores_nothing(
    client: httpx.AsyncClient, sessions: Sessions
) -> None:
    request = shop_request(paid())
    body = b"{not json"
    request["content"] = body
    request["headers"]["Payment-Signature"] = sign_shop(body)

    response = await client.post("/v1/payments/webhook", **request)

    assert response.status_code == 422
    assert await stored(sessions) == []


async def test_a_body_over_64_kib_is_413_and_stores_nothing(
    client: httpx.AsyncClient, sessions: Sessions
) -> None:
    request = shop_request(paid(provider_payment_id="x" * (65 * 1024)))

    response = await client.post("/v1/payments/webhook", **request)

    assert response.status_code == 413
    assert await stored(sessions) == []


async def test_midtrans_pending_then_settlement_twice_keeps_two_events_and_queues_two(
    client: httpx.AsyncClient, sessions: Sessions
) -> None:
    answers = [
        await client.post("/v1/payments/webhooks/midtrans", **midtrans_request(body))
        for body in (settlement("pending"), settlement(), settlement())
    ]

    assert [a.status_code for a in answers] == [200, 200, 200]
    assert [a.json()["repeat"] for a in answers] == [False, False, True]
    transaction = "9aed5972-5b6a-401e-894b-a32c91ed1a3a"
    assert [(p, e) for p, e, _ in await stored(sessions)] == [
        ("midtrans", f"{transaction}:pending"),
        ("midtrans", f"{transaction}:settlement"),
    ]
    assert [c.provider for c in await commands(sessions)] == ["midtrans", "midtrans"]


@pytest.mark.parametrize(
    "status", ["authorize", "chargeback", "partial_chargeback", "refund", "partial_refund"]
)
async def test_every_status_midtrans_documents_is_taken(
    client: httpx.AsyncClient, sessions: Sessions, status: str
) -> None:
    answer = await client.post(
        "/v1/payments/webhooks/midtrans",
        **midtrans_request(settlement(status, status_code="200")),
    )

    assert answer.status_code == 200, answer.text
    [(_, event_id, _)] = await stored(sessions)
    assert event_id.startswith(f"9aed5972-5b6a-401e-894b-a32c91ed1a3a:{status}")


async def test_two_partial_refunds_of_one_transaction_are_two_events_and_a_repeat_is_one(
    client: httpx.AsyncClient, sessions: Sessions
) -> None:
    first = settlement("partial_refund", status_code="200", refund_amount="50000.00")
    second = settlement("partial_refund", status_code="200", refund_amount="70000.00")

    answers = [
        await client.post("/v1/payments/webhooks/midtrans", **midtrans_request(body))
        for body in (first, second, first)
    ]

    assert [a.json()["repeat"] for a in answers] == [False, False, True]
    assert len(await stored(sessions)) == 2


async def test_a_wrong_midtrans_signature_key_is_401_and_stores_nothing(
    client: httpx.AsyncClient, sessions: Sessions
) -> None:
    response = await client.post(
        "/v1/payments/webhooks/midtrans",
        **midtrans_request(settlement(), server_key="SB-Mid-server-someone-else"),
    )

    assert response.status_code == 401
    assert "signature_key" in response.json()["detail"]
    assert await stored(sessions) == []


@pytest.mark.parametrize(
    ("fields", "named"),
    [
        ({"transaction_status": "teleported"}, "unknown transaction_status"),
        ({"gross_amount": "178000.50"}, "not a whole Rupiah amount"),
        ({"order_id": "SK-7KQ4-M2XD"}, "not an order id of this shop"),
        ({"status_code": "201"}, "a payment Midtrans confirms carries 200"),
    ],
)
async def test_a_midtrans_notification_the_shop_cannot_read_is_422_saying_why(
    client: httpx.AsyncClient, sessions: Sessions, fields: dict[str, str], named: str
) -> None:
    response = await client.post(
        "/v1/payments/webhooks/midtrans", **midtrans_request(settlement(**fields))
    )

    assert response.status_code == 422, response.text
    assert named in response.json()["detail"]
    assert await stored(sessions) == []


async def test_a_midtrans_notification_without_its_signature_is_422_naming_it(
    client: httpx.AsyncClient, sessions: Sessions
) -> None:
    response = await client.post(
        "/v1/payments/webhooks/midtrans",
        content=json.dumps(settlement()).encode(),
        headers={"Content-Type": "application/json"},
    )

    assert response.status_code == 422
    assert "body.signature_key" in {e["field"] for e in response.json()["errors"]}
    assert await stored(sessions) == []


async def test_health_and_readiness(client: httpx.AsyncClient) -> None:
    assert (await client.get("/healthz")).json() == {"status": "ok"}
    assert (await client.get("/readyz")).json() == {"status": "ready", "database": "ok"}
    assert "http_requests_total" in (await client.get("/metrics")).text


async def test_no_secret_or_signature_reaches_the_logs(
    client: httpx.AsyncClient, payment_settings: PaymentSettings
) -> None:
    shop = shop_request(paid())
    signature = shop["headers"]["Payment-Signature"]
    forged = shop_request(paid("evt_forged"), secret="whsec_guessed")
    midtrans = midtrans_request(settlement())
    signature_key = json.loads(midtrans["content"])["signature_key"]

    with capture_logs() as logs:
        await client.post("/v1/payments/webhook", **shop)
        await client.post("/v1/payments/webhook", **forged)
        await client.post("/v1/payments/webhooks/midtrans", **midtrans)

    written = json.dumps(logs, default=str)
    assert "payment notification taken" in written
    secrets = [s.get_secret_value() for s in payment_settings.webhook_secrets]
    for unsayable in [*secrets, SERVER_KEY, signature, signature.split("v1=")[1], signature_key]:
        assert unsayable not in written


async def test_a_notification_while_the_database_is_down_is_a_503_to_send_again(
    payment_settings: PaymentSettings,
) -> None:
    # A database restart: nothing listens where the database was.
    down = payment_settings.model_copy(
        update={"database_url": f"postgresql://postgres@127.0.0.1:{free_port()}/shop_payment"}
    )
    engine = create_engine(down.database_url)
    app = create_app(down, AsyncpgWebhookStore(engine))
    try:
        async with httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app), base_url="http://payment.test"
        ) as client:
            response = await client.post("/v1/payments/webhook", **shop_request(paid()))
    finally:
        await engine.dispose()

    assert response.status_code == 503, response.text
    assert response.headers["content-type"] == "application/problem+json"
    assert response.headers["retry-after"] == "1"
    assert "send the same request again" in response.json()["detail"]
