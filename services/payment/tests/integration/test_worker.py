"""The payment worker on real Postgres, a real Kafka-protocol broker and the development
payment gateway over HTTP, fed by the real webhook: each notification is confirmed with the
gateway before anything moves, each order's payment is paid once however often and in
whatever order its notifications arrive, a notification the gateway does not bear out or a
wrong amount never pays and ends as a dead letter with the reason, a notification ahead of
its order waits for it, the window expires unpaid payments, and money that cannot be kept is
refunded through the gateway."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest
from pydantic import SecretStr
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from shop.contracts import (
    ConsumerGroup,
    OrderCancelled,
    OrderCreated,
    PaymentExpired,
    PaymentFailed,
    PaymentReceived,
    PaymentReversed,
    ProcessPayment,
    decode,
    examples,
    wrap,
)
from shop.devstack.kafka import KafkaCluster
from shop.messaging import Worker
from shop.messaging.schema import inbox, outbox
from shop.messaging.testing import eventually, on_kafka, publish_with, running, wait_until
from shop.payment.adapters.tables import payment_events, payments
from shop.payment.bootstrap import build_worker
from shop.payment.bus import PUBLISHES
from shop.payment.settings import PaymentSettings
from shop.simulators import gateway
from shop.simulators.gateway import Format

from ..signing import GATEWAY_API_KEY, midtrans_request, shop_request
from .test_webhooks import paid, settlement

Sessions = async_sessionmaker[AsyncSession]
ORDER_ID = uuid.UUID("6f1c2a4e-8d3b-4c1a-9e2f-0a1b2c3d4e5f")
TOTAL = 178000


@pytest.fixture
def kafka_settings(
    payment_settings: PaymentSettings, kafka_cluster: KafkaCluster, gateway_url: str
) -> PaymentSettings:
    messaging = on_kafka(payment_settings.messaging, kafka_cluster.bootstrap_servers)
    relay = payment_settings.relay.model_copy(update={"poll_interval": 0.2})
    return payment_settings.model_copy(
        update={
            "messaging": messaging,
            "relay": relay,
            "midtrans_api_url": gateway_url,
            "shop_gateway_api_url": gateway_url,
            "shop_gateway_api_key": SecretStr(GATEWAY_API_KEY),
            "gateway_timeout_seconds": 5,
            "reconcile_interval_seconds": 3600,
            "reconcile_settling_seconds": 0,
        }
    )


@pytest.fixture
async def worker(kafka_settings: PaymentSettings) -> AsyncIterator[Worker]:
    async with running(build_worker(kafka_settings, health_port=0)) as worker:
        yield worker


def order_created(
    order_id: uuid.UUID = ORDER_ID, total: int = TOTAL, placed_at: datetime | None = None
) -> OrderCreated:
    example = examples.examples()[OrderCreated]
    assert isinstance(example, OrderCreated)
    lines = [example.lines[0].model_copy(update={"quantity": 1, "unit_price": total})]
    number = f"SK-{order_id.hex[:4]}-{order_id.hex[4:8]}".upper()
    return example.model_copy(
        update={
            "order_id": order_id,
            "order_number": number,
            "total": total,
            "lines": lines,
            "placed_at": placed_at or datetime.now(UTC),
        }
    )


async def charged(
    gateway_url: str,
    order_id: uuid.UUID = ORDER_ID,
    *,
    amount: int = TOTAL,
    fmt: Format = Format.SHOP,
    outcome: str = "settlement",
) -> str:
    """The customer pays at the gateway (its notifications lost on the way: the tests post
    them); the gateway's id of the charge."""
    payment = gateway.Payment(order_id, amount, "IDR")
    await gateway.pay_at_gateway(
        gateway_url, payment, fmt=fmt, outcome=outcome, amount=amount, notify=False
    )
    record = await gateway.charge_of(gateway_url, order_id)
    return str(record.get("charge_id") or record["transaction_id"])


async def publish(settings: PaymentSettings, *events: Any) -> None:
    await publish_with(settings.messaging, *(wrap(e, key=str(e.order_id)) for e in events))


async def payment_status(sessions: Sessions, order_id: uuid.UUID = ORDER_ID) -> str | None:
    async with sessions() as session:
        query = select(payments.c.status).where(payments.c.order_id == order_id)
        return (await session.execute(query)).scalar_one_or_none()


async def published(sessions: Sessions, kind: type[Any]) -> list[Any]:
    async with sessions() as session:
        bodies = (await session.execute(select(outbox.c.body).order_by(outbox.c.id))).scalars()
        payloads = [decode(body).payload for body in bodies]
    return [p for p in payloads if isinstance(p, kind)]


async def outcomes(sessions: Sessions) -> list[str | None]:
    async with sessions() as session:
        query = select(payment_events.c.outcome).order_by(payment_events.c.id)
        return list((await session.execute(query)).scalars())


async def until_status(sessions: Sessions, status: str, order_id: uuid.UUID = ORDER_ID) -> None:
    async def reached() -> bool:
        return await payment_status(sessions, order_id) == status

    await eventually(reached, within=60, what=f"the payment to be {status}")


async def until_processed(sessions: Sessions, count: int) -> None:
    async def processed() -> bool:
        done = [o for o in await outcomes(sessions) if o is not None]
        return len(done) >= count

    await eventually(processed, within=60, what=f"{count} notification(s) processed")


async def dead_letters_of(worker: Worker, count: int) -> list[Any]:
    dead_letters = worker.dead_letters(ConsumerGroup.PAYMENT)

    async def dead_lettered() -> bool:
        return len(await dead_letters.list()) >= count

    await eventually(dead_lettered, within=60, what=f"{count} dead letter(s)")
    return list(await dead_letters.list())


async def test_the_same_notification_five_times_at_once_pays_once(
    worker: Worker,
    kafka_settings: PaymentSettings,
    client: httpx.AsyncClient,
    sessions: Sessions,
    gateway_url: str,
) -> None:
    await publish(kafka_settings, order_created())
    await until_status(sessions, "pending")
    charge = await charged(gateway_url)
    request = shop_request(paid(provider_payment_id=charge))

    answers = await asyncio.gather(
        *(client.post("/v1/payments/webhook", **request) for _ in range(5))
    )

    assert [a.status_code for a in answers] == [200] * 5
    await until_status(sessions, "paid")
    await until_processed(sessions, 1)
    [received] = await published(sessions, PaymentReceived)
    assert (received.order_id, received.amount, received.provider_event_id) == (
        ORDER_ID,
        TOTAL,
        charge,
    )
    assert await outcomes(sessions) == ["paid"]


async def test_a_cancel_edited_into_a_settlement_never_pays_and_is_flagged_and_dead_lettered(
    worker: Worker,
    kafka_settings: PaymentSettings,
    client: httpx.AsyncClient,
    sessions: Sessions,
    gateway_url: str,
) -> None:
    await publish(kafka_settings, order_created())
    await until_status(sessions, "pending")
    await charged(gateway_url, fmt=Format.MIDTRANS, outcome="cancel")
    record = await gateway.charge_of(gateway_url, ORDER_ID)
    # A genuine, signed "cancel" (status_code 200) with its status edited: the signature
    # still holds, since Midtrans signs neither the status nor the transaction id.
    edited = settlement("settlement", status_code="200", transaction_id=record["transaction_id"])

    response = await client.post("/v1/payments/webhooks/midtrans", **midtrans_request(edited))

    assert response.status_code == 200
    [letter] = await dead_letters_of(worker, 1)
    assert letter.error_type == "PermanentError"
    assert "says 'settlement', the gateway says 'cancel'" in letter.error_message
    await until_processed(sessions, 1)
    assert await payment_status(sessions) == "failed", "the gateway's word, not the body's"
    assert await published(sessions, PaymentReceived) == []
    async with sessions() as session:
        flagged = (
            await session.execute(select(payments.c.flagged).where(payments.c.order_id == ORDER_ID))
        ).scalar_one()
    assert "the gateway says 'cancel'" in str(flagged)


async def test_a_wrong_amount_never_pays_and_ends_as_a_dead_letter_with_the_reason(
    worker: Worker,
    kafka_settings: PaymentSettings,
    client: httpx.AsyncClient,
    sessions: Sessions,
    gateway_url: str,
) -> None:
    await publish(kafka_settings, order_created())
    await until_status(sessions, "pending")
    charge = await charged(gateway_url, amount=1000)

    response = await client.post(
        "/v1/payments/webhook", **shop_request(paid(amount=1000, provider_payment_id=charge))
    )

    assert response.status_code == 200
    reason = f"the gateway took 1000 IDR, but the order is {TOTAL} IDR"
    [letter] = await dead_letters_of(worker, 1)
    assert (letter.error_type, letter.error_message) == (
        "PermanentError",
        f"AmountMismatch: {reason}",
    )
    assert letter.attempts == 1
    await until_processed(sessions, 1)
    assert await outcomes(sessions) == [f"not paid: {reason}"]
    assert await payment_status(sessions) == "pending"
    assert await published(sessions, PaymentReceived) == []


async def test_a_notification_long_ahead_of_order_created_waits_and_pays_once_it_opens(
    worker: Worker,
    kafka_settings: PaymentSettings,
    client: httpx.AsyncClient,
    sessions: Sessions,
    gateway_url: str,
) -> None:
    charge = await charged(gateway_url)
    response = await client.post(
        "/v1/payments/webhook", **shop_request(paid(provider_payment_id=charge))
    )
    assert response.status_code == 200
    # Longer than every retry of the old way (2+4+8+16 s, scaled by time_scale 0.01):
    # nothing is retried now, so nothing can run out.
    await asyncio.sleep(2)
    assert await payment_status(sessions) is None, "no OrderCreated yet: nothing to pay"
    assert await dead_letters_of(worker, 0) == []

    await publish(kafka_settings, order_created())

    await until_status(sessions, "paid")
    assert len(await published(sessions, PaymentReceived)) == 1


async def test_midtrans_pending_then_settlement_twice_pays_once(
    worker: Worker,
    kafka_settings: PaymentSettings,
    client: httpx.AsyncClient,
    sessions: Sessions,
    gateway_url: str,
) -> None:
    await publish(kafka_settings, order_created())
    await until_status(sessions, "pending")
    await charged(gateway_url, fmt=Format.MIDTRANS)
    transaction = (await gateway.charge_of(gateway_url, ORDER_ID))["transaction_id"]

    for body in (settlement("pending"), settlement(), settlement()):
        body["transaction_id"] = transaction
        response = await client.post("/v1/payments/webhooks/midtrans", **midtrans_request(body))
        assert response.status_code == 200

    await until_status(sessions, "paid")
    await until_processed(sessions, 2)
    assert (await outcomes(sessions)).count("paid") == 1
    [received] = await published(sessions, PaymentReceived)
    assert received.provider_event_id == transaction


async def test_a_failed_try_publishes_payment_failed_and_a_later_success_still_pays(
    worker: Worker,
    kafka_settings: PaymentSettings,
    client: httpx.AsyncClient,
    sessions: Sessions,
    gateway_url: str,
) -> None:
    await publish(kafka_settings, order_created())
    await until_status(sessions, "pending")
    refused = await charged(gateway_url, outcome="deny")
    failure = {**paid("evt_failed", provider_payment_id=refused), "type": "payment.failed"}

    await client.post("/v1/payments/webhook", **shop_request(failure))
    await until_status(sessions, "failed")
    retried = await charged(gateway_url)
    await client.post(
        "/v1/payments/webhook", **shop_request(paid("evt_retried", provider_payment_id=retried))
    )

    await until_status(sessions, "paid")
    assert len(await published(sessions, PaymentFailed)) == 1
    assert len(await published(sessions, PaymentReceived)) == 1


async def test_the_window_expires_an_unpaid_payment_and_a_late_payment_is_refunded_once(
    worker: Worker,
    kafka_settings: PaymentSettings,
    client: httpx.AsyncClient,
    sessions: Sessions,
    gateway_url: str,
) -> None:
    # Placed long ago: its window (and grace) are over as its payment opens.
    long_ago = datetime.now(UTC) - timedelta(hours=2)
    await publish(kafka_settings, order_created(placed_at=long_ago))

    await until_status(sessions, "expired")
    [expired] = await published(sessions, PaymentExpired)
    assert expired.order_id == ORDER_ID

    charge = await charged(gateway_url)
    await client.post("/v1/payments/webhook", **shop_request(paid(provider_payment_id=charge)))

    await until_status(sessions, "refunded")
    record = await gateway.charge_of(gateway_url, ORDER_ID)
    assert [(r["kind"], r["amount"]) for r in record["reversals"]] == [("refund", TOTAL)]
    [refunded] = await published(sessions, PaymentReversed)
    assert (refunded.kind, refunded.amount, refunded.reversed_total) == ("refund", TOTAL, TOTAL)
    assert await published(sessions, PaymentReceived) == []


async def test_a_settlement_inside_the_window_pays_at_expiry_though_its_notification_is_lost(
    worker: Worker, kafka_settings: PaymentSettings, sessions: Sessions, gateway_url: str
) -> None:
    await charged(gateway_url)
    long_ago = datetime.now(UTC) - timedelta(hours=2)

    await publish(kafka_settings, order_created(placed_at=long_ago))

    await until_status(sessions, "paid")
    assert await published(sessions, PaymentExpired) == []
    assert len(await published(sessions, PaymentReceived)) == 1


async def test_a_charge_still_waiting_at_expiry_is_closed_at_the_gateway_and_expires(
    worker: Worker, kafka_settings: PaymentSettings, sessions: Sessions, gateway_url: str
) -> None:
    await charged(gateway_url, fmt=Format.MIDTRANS, outcome="pending")
    long_ago = datetime.now(UTC) - timedelta(hours=2)

    await publish(kafka_settings, order_created(placed_at=long_ago))

    await until_status(sessions, "expired")
    record = await gateway.charge_of(gateway_url, ORDER_ID)
    assert record["transaction_status"] == "expire", "closed: it can no longer be paid"
    assert len(await published(sessions, PaymentExpired)) == 1


async def test_a_late_card_capture_is_given_back_by_cancelling_it_at_midtrans(
    worker: Worker,
    kafka_settings: PaymentSettings,
    client: httpx.AsyncClient,
    sessions: Sessions,
    gateway_url: str,
) -> None:
    long_ago = datetime.now(UTC) - timedelta(hours=2)
    await publish(kafka_settings, order_created(placed_at=long_ago))
    await until_status(sessions, "expired")

    transaction = await charged(gateway_url, fmt=Format.MIDTRANS, outcome="capture")
    capture = settlement(
        "capture",
        status_code="200",
        fraud_status="accept",
        payment_type="credit_card",
        transaction_id=transaction,
    )
    response = await client.post("/v1/payments/webhooks/midtrans", **midtrans_request(capture))
    assert response.status_code == 200

    await until_status(sessions, "refunded")
    record = await gateway.charge_of(gateway_url, ORDER_ID)
    assert record["transaction_status"] == "cancel"
    [voided] = await published(sessions, PaymentReversed)
    assert (voided.kind, voided.amount) == ("void", TOTAL)


async def test_two_partial_refunds_and_a_chargeback_at_the_gateway_are_three_reversals(
    worker: Worker,
    kafka_settings: PaymentSettings,
    client: httpx.AsyncClient,
    sessions: Sessions,
    gateway_url: str,
) -> None:
    await publish(kafka_settings, order_created())
    await until_status(sessions, "pending")
    charge = await charged(gateway_url)
    await client.post("/v1/payments/webhook", **shop_request(paid(provider_payment_id=charge)))
    await until_status(sessions, "paid")

    for event_id, amount in (("evt_r1", 50000), ("evt_r2", 70000)):
        await gateway.refund_at_gateway(gateway_url, ORDER_ID, amount, notify=False)
        told = {**paid(event_id, amount=amount, provider_payment_id=charge)}
        told["type"] = "payment.refunded"
        await client.post("/v1/payments/webhook", **shop_request(told))
    await until_status(sessions, "partially_refunded")

    async def two_reversals() -> bool:
        return len(await published(sessions, PaymentReversed)) == 2

    await eventually(two_reversals, within=60, what="two PaymentReversed")
    await gateway.charge_back(gateway_url, ORDER_ID, 10000, notify=False)
    back = {
        **paid("evt_cb", amount=10000, provider_payment_id=charge),
        "type": "payment.charged_back",
    }
    await client.post("/v1/payments/webhook", **shop_request(back))

    await until_status(sessions, "charged_back")
    totals = [
        (e.kind, e.amount, e.reversed_total) for e in await published(sessions, PaymentReversed)
    ]
    assert totals == [
        ("refund", 50000, 50000),
        ("refund", 70000, 120000),
        ("chargeback", 10000, 130000),
    ]


async def test_the_outbox_holds_exactly_the_messages_payment_service_declares(
    worker: Worker,
    kafka_settings: PaymentSettings,
    client: httpx.AsyncClient,
    sessions: Sessions,
    gateway_url: str,
) -> None:
    # What its AsyncAPI document says it publishes (shop.payment.bus), against what the
    # webhooks and the worker write: a failed try then a success then a refund at the
    # gateway; another order expired and then paid late.
    await publish(kafka_settings, order_created())
    await until_status(sessions, "pending")
    refused = await charged(gateway_url, outcome="deny")
    failure = {**paid("evt_failed", provider_payment_id=refused), "type": "payment.failed"}
    await client.post("/v1/payments/webhook", **shop_request(failure))
    await until_status(sessions, "failed")
    retried = await charged(gateway_url)
    await client.post(
        "/v1/payments/webhook", **shop_request(paid("evt_retried", provider_payment_id=retried))
    )
    await until_status(sessions, "paid")
    late = uuid.uuid4()
    await publish(
        kafka_settings, order_created(late, placed_at=datetime.now(UTC) - timedelta(hours=2))
    )
    await until_status(sessions, "expired", late)
    charge = await charged(gateway_url, late)
    await client.post(
        "/v1/payments/webhook",
        **shop_request(paid("evt_late", order_id=str(late), provider_payment_id=charge)),
    )
    await until_status(sessions, "refunded", late)

    async with sessions() as session:
        bodies = (await session.execute(select(outbox.c.body))).scalars()
        written = {type(decode(body).payload) for body in bodies}
    assert written == set(PUBLISHES)


async def test_a_cancelled_order_expires_its_pending_payment_and_refunds_a_paid_one(
    worker: Worker,
    kafka_settings: PaymentSettings,
    client: httpx.AsyncClient,
    sessions: Sessions,
    gateway_url: str,
) -> None:
    unpaid, settled = uuid.uuid4(), ORDER_ID
    await publish(kafka_settings, order_created(unpaid), order_created(settled))
    await until_status(sessions, "pending", unpaid)
    await until_status(sessions, "pending", settled)
    charge = await charged(gateway_url)
    await client.post("/v1/payments/webhook", **shop_request(paid(provider_payment_id=charge)))
    await until_status(sessions, "paid", settled)

    cancelled = examples.examples()[OrderCancelled]
    await publish(
        kafka_settings,
        *(cancelled.model_copy(update={"order_id": order_id}) for order_id in (unpaid, settled)),
    )

    await until_status(sessions, "expired", unpaid)
    await until_status(sessions, "refunded", settled)
    record = await gateway.charge_of(gateway_url, settled)
    assert [r["amount"] for r in record["reversals"]] == [TOTAL], "refunded once"


async def test_a_cancellation_that_outruns_its_orders_creation_leaves_the_payment_expired(
    worker: Worker, kafka_settings: PaymentSettings, sessions: Sessions
) -> None:
    # OrderCreated and OrderCancelled travel on topics of their own: a customer who cancels
    # straight after the checkout can have the cancellation arrive first.
    order_id = uuid.uuid4()
    created = order_created(order_id)
    cancelled = examples.examples()[OrderCancelled].model_copy(
        update={"order_id": order_id, "order_number": created.order_number}
    )
    await publish(kafka_settings, cancelled)
    await until_status(sessions, "expired", order_id)

    created_envelope = wrap(created, key=str(order_id))
    await publish_with(kafka_settings.messaging, created_envelope)

    async def created_handled() -> bool:
        async with sessions() as session:
            query = select(inbox.c.event_id).where(inbox.c.event_id == created_envelope.event_id)
            return (await session.execute(query)).first() is not None

    await eventually(created_handled, within=60, what="the late OrderCreated handled")
    assert await payment_status(sessions, order_id) == "expired"


async def test_process_payment_delivered_again_changes_nothing_and_keeps_the_first_outcome(
    worker: Worker,
    kafka_settings: PaymentSettings,
    client: httpx.AsyncClient,
    sessions: Sessions,
    gateway_url: str,
) -> None:
    await publish(kafka_settings, order_created())
    await until_status(sessions, "pending")
    charge = await charged(gateway_url)
    await client.post("/v1/payments/webhook", **shop_request(paid(provider_payment_id=charge)))
    await until_processed(sessions, 1)

    # What a crash between the commit and the acknowledgement redelivers (as a new
    # envelope: the relay may send a row twice).
    again = ProcessPayment(provider_event_id="evt_1", provider="shop")
    await publish_with(kafka_settings.messaging, wrap(again, key=str(ORDER_ID)))
    await publish_with(kafka_settings.messaging, wrap(again, key=str(ORDER_ID)))

    def processed_three_times() -> bool:
        handled = [
            sample.value
            for metric in worker.metrics.registry.collect()
            if metric.name == "messaging_consumed"
            for sample in metric.samples
            if sample.name == "messaging_consumed_total"
            and sample.labels.get("message_type") == "payment.process"
        ]
        return sum(handled) >= 3

    await wait_until(processed_three_times, within=60, what="both redeliveries handled")
    assert await outcomes(sessions) == ["paid"], "the first outcome stays"
    assert len(await published(sessions, PaymentReceived)) == 1
    assert await payment_status(sessions) == "paid"


async def test_the_reconciliation_route_finds_and_repairs_a_settlement_never_notified(
    worker: Worker, kafka_settings: PaymentSettings, sessions: Sessions, gateway_url: str
) -> None:
    await publish(kafka_settings, order_created())
    await until_status(sessions, "pending")
    await charged(gateway_url)
    assert worker.health is not None
    since = (datetime.now(UTC) - timedelta(hours=1)).isoformat()

    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{worker.health.port}") as ops:
        reply = await ops.post("/reconciliation", params={"since": since})
        latest = await ops.get("/reconciliation")

    assert reply.status_code == 200, reply.text
    report = reply.json()
    assert report["drift"]["settlement_missed"] == 1
    [finding] = report["findings"]
    assert (finding["kind"], finding["repaired"]) == ("settlement_missed", True)
    assert latest.json() == report
    await until_status(sessions, "paid")
