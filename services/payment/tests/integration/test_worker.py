"""The payment worker on real Postgres and a real Kafka-protocol broker, fed by the real
webhook: each order's payment is paid once however often and in whatever order its
notifications arrive, a wrong amount never pays and ends as a dead letter with the reason,
and a cancelled order's pending payment expires."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from shop.contracts import (
    ConsumerGroup,
    OrderCancelled,
    OrderCreated,
    PaymentFailed,
    PaymentReceived,
    ProcessPayment,
    decode,
    examples,
    wrap,
)
from shop.devstack.kafka import KafkaCluster
from shop.messaging import DeadLetters, Worker, create_transport
from shop.messaging.schema import inbox, outbox
from shop.messaging.testing import eventually, on_kafka, publish_with, running, wait_until
from shop.payment.adapters.tables import payment_events, payments
from shop.payment.bootstrap import build_worker
from shop.payment.bus import PUBLISHES
from shop.payment.settings import PaymentSettings

from ..signing import midtrans_request, shop_request
from .test_webhooks import paid, settlement

Sessions = async_sessionmaker[AsyncSession]
ORDER_ID = uuid.UUID("6f1c2a4e-8d3b-4c1a-9e2f-0a1b2c3d4e5f")
TOTAL = 178000


@pytest.fixture
def kafka_settings(
    payment_settings: PaymentSettings, kafka_cluster: KafkaCluster
) -> PaymentSettings:
    messaging = on_kafka(payment_settings.messaging, kafka_cluster.bootstrap_servers)
    relay = payment_settings.relay.model_copy(update={"poll_interval": 0.2})
    return payment_settings.model_copy(update={"messaging": messaging, "relay": relay})


@pytest.fixture
async def worker(kafka_settings: PaymentSettings) -> AsyncIterator[Worker]:
    async with running(build_worker(kafka_settings, health_port=0)) as worker:
        yield worker


def order_created(order_id: uuid.UUID = ORDER_ID, total: int = TOTAL) -> OrderCreated:
    example = examples.examples()[OrderCreated]
    assert isinstance(example, OrderCreated)
    lines = [example.lines[0].model_copy(update={"quantity": 1, "unit_price": total})]
    number = f"SK-{order_id.hex[:4]}-{order_id.hex[4:8]}".upper()
    return example.model_copy(
        update={"order_id": order_id, "order_number": number, "total": total, "lines": lines}
    )


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


async def test_the_same_notification_five_times_at_once_pays_once(
    worker: Worker, kafka_settings: PaymentSettings, client: httpx.AsyncClient, sessions: Sessions
) -> None:
    await publish(kafka_settings, order_created())
    await until_status(sessions, "pending")
    request = shop_request(paid())

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
        "evt_1",
    )
    assert await outcomes(sessions) == ["paid"]


async def test_a_wrong_amount_never_pays_and_ends_as_a_dead_letter_with_the_reason(
    worker: Worker, kafka_settings: PaymentSettings, client: httpx.AsyncClient, sessions: Sessions
) -> None:
    await publish(kafka_settings, order_created())
    await until_status(sessions, "pending")

    response = await client.post("/v1/payments/webhook", **shop_request(paid(amount=1000)))

    assert response.status_code == 200
    reason = f"paid 1000 IDR, but the order is {TOTAL} IDR"
    await until_processed(sessions, 1)
    assert await outcomes(sessions) == [f"flagged: {reason}"]
    assert await payment_status(sessions) == "pending"
    assert await published(sessions, PaymentReceived) == []
    transport = create_transport(kafka_settings.messaging)
    await transport.start()
    try:
        dead_letters = DeadLetters(transport.dead_letter_store, ConsumerGroup.PAYMENT)

        async def dead_lettered() -> bool:
            return len(await dead_letters.list()) == 1

        await eventually(dead_lettered, within=60, what="the dead letter")
        [letter] = await dead_letters.list()
    finally:
        await transport.close()
    assert (letter.error_type, letter.error_message) == ("PermanentError", reason)
    assert letter.attempts == 1


async def test_a_notification_that_outruns_order_created_is_applied_once_the_payment_opens(
    worker: Worker, kafka_settings: PaymentSettings, client: httpx.AsyncClient, sessions: Sessions
) -> None:
    response = await client.post("/v1/payments/webhook", **shop_request(paid()))
    assert response.status_code == 200
    assert await payment_status(sessions) is None, "no OrderCreated yet: nothing to pay"

    await publish(kafka_settings, order_created())

    await until_status(sessions, "paid")
    assert len(await published(sessions, PaymentReceived)) == 1


async def test_midtrans_pending_then_settlement_twice_pays_once(
    worker: Worker, kafka_settings: PaymentSettings, client: httpx.AsyncClient, sessions: Sessions
) -> None:
    await publish(kafka_settings, order_created())
    await until_status(sessions, "pending")

    for body in (settlement("pending"), settlement(), settlement()):
        response = await client.post("/v1/payments/webhooks/midtrans", **midtrans_request(body))
        assert response.status_code == 200

    await until_status(sessions, "paid")
    await until_processed(sessions, 2)
    assert await outcomes(sessions) == ["pending at the gateway: nothing to do yet", "paid"]
    [received] = await published(sessions, PaymentReceived)
    assert received.provider_event_id.endswith(":settlement")


async def test_a_failed_payment_publishes_payment_failed_and_a_later_success_still_pays(
    worker: Worker, kafka_settings: PaymentSettings, client: httpx.AsyncClient, sessions: Sessions
) -> None:
    await publish(kafka_settings, order_created())
    await until_status(sessions, "pending")
    failure = {**paid("evt_failed"), "type": "payment.failed"}

    await client.post("/v1/payments/webhook", **shop_request(failure))
    await until_status(sessions, "failed")
    await client.post("/v1/payments/webhook", **shop_request(paid("evt_retried")))

    await until_status(sessions, "paid")
    assert len(await published(sessions, PaymentFailed)) == 1
    assert len(await published(sessions, PaymentReceived)) == 1


async def test_the_outbox_holds_exactly_the_messages_payment_service_declares(
    worker: Worker, kafka_settings: PaymentSettings, client: httpx.AsyncClient, sessions: Sessions
) -> None:
    # What its AsyncAPI document says it publishes (shop.payment.bus), against what the
    # webhooks and the worker write: a failed payment, then a successful one.
    await publish(kafka_settings, order_created())
    await until_status(sessions, "pending")
    failure = {**paid("evt_failed"), "type": "payment.failed"}
    await client.post("/v1/payments/webhook", **shop_request(failure))
    await until_status(sessions, "failed")
    await client.post("/v1/payments/webhook", **shop_request(paid("evt_retried")))
    await until_status(sessions, "paid")

    async with sessions() as session:
        bodies = (await session.execute(select(outbox.c.body))).scalars()
        written = {type(decode(body).payload) for body in bodies}
    assert written == set(PUBLISHES)


async def test_a_cancelled_order_expires_its_pending_payment_and_leaves_a_paid_one_paid(
    worker: Worker, kafka_settings: PaymentSettings, client: httpx.AsyncClient, sessions: Sessions
) -> None:
    unpaid, settled = uuid.uuid4(), ORDER_ID
    await publish(kafka_settings, order_created(unpaid), order_created(settled))
    await until_status(sessions, "pending", unpaid)
    await until_status(sessions, "pending", settled)
    await client.post("/v1/payments/webhook", **shop_request(paid()))
    await until_status(sessions, "paid", settled)

    cancelled = examples.examples()[OrderCancelled]
    await publish(
        kafka_settings,
        *(cancelled.model_copy(update={"order_id": order_id}) for order_id in (unpaid, settled)),
    )

    await until_status(sessions, "expired", unpaid)

    async def both_cancellations_handled() -> bool:
        async with sessions() as session:
            query = select(inbox.c.event_id).where(inbox.c.message_type == "order.cancelled")
            return len((await session.execute(query)).all()) == 2

    await eventually(both_cancellations_handled, within=60, what="both OrderCancelled handled")
    assert await payment_status(sessions, settled) == "paid"


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
    worker: Worker, kafka_settings: PaymentSettings, client: httpx.AsyncClient, sessions: Sessions
) -> None:
    await publish(kafka_settings, order_created())
    await until_status(sessions, "pending")
    await client.post("/v1/payments/webhook", **shop_request(paid()))
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
