"""The console on the real parts: the services' internal APIs on their own Postgres
databases, the devstack's Kafka, a worker consuming as notification-service, read and driven
through shop.ops."""

from __future__ import annotations

import uuid

from shop.console.adapters.orders import ServiceOrderDirectory
from shop.console.bootstrap import build_app
from shop.devstack.ports import free_port
from shop.messaging import MessagingSettings
from shop.messaging.testing import eventually, running
from shop.ops.deadletters import list_dead_letters

from .conftest import (
    OPERATOR_TOKEN,
    PlacedOrder,
    console_settings,
    csrf_of,
    internal_routes,
    logged_in_client,
    ops_settings,
    place_order,
)
from .consumer import REFUSAL, RefusingConsumer


async def test_orders_are_found_through_order_services_internal_api_by_number_and_by_id(
    service_databases: dict[str, str],
    internal_apis: dict[str, str],
    placed_order: PlacedOrder,
    messaging: MessagingSettings,
) -> None:
    other = await place_order(service_databases["order"])
    directory = ServiceOrderDirectory(ops_settings(internal_apis, messaging))
    by_number = await directory.search(placed_order.number[3:].lower())
    by_id = await directory.search(str(other.id))
    newest = await directory.search("")
    nothing = await directory.search("SK-%")
    found = await directory.get(placed_order.id)
    missing = await directory.get(uuid.uuid4())

    assert [order.id for order in by_number] == [placed_order.id]
    assert [order.id for order in by_id] == [other.id]
    assert {order.id for order in newest} == {placed_order.id, other.id}
    assert nothing == []
    assert found is not None
    assert (found.status, found.total, found.currency) == ("pending", 250_000, "IDR")
    assert missing is None


async def test_the_outbox_and_the_orders_timeline_come_from_the_services_internal_apis(
    internal_apis: dict[str, str], placed_order: PlacedOrder, messaging: MessagingSettings
) -> None:
    app = build_app(console_settings(), ops_settings(internal_apis, messaging))

    async with logged_in_client(app) as client:
        outbox = await client.get("/outbox")
        order = await client.get(f"/orders/{placed_order.id}")
        found = await client.get("/orders", params={"q": placed_order.number})

    assert outbox.status_code == 200, outbox.text
    row = outbox.text[outbox.text.index('<th scope="row">order-service</th>') :]
    assert row.split("</td>", 1)[0].endswith(">1")  # the OrderCreated no relay has sent
    assert order.status_code == 200, order.text
    assert "order placed" in order.text
    assert "order.created added to the outbox" in order.text
    assert f'href="/orders/{placed_order.id}"' in found.text


async def test_a_dead_letter_is_shown_redriven_to_its_consumer_and_another_purged(
    service_databases: dict[str, str],
    internal_apis: dict[str, str],
    placed_order: PlacedOrder,
    messaging: MessagingSettings,
) -> None:
    second = await place_order(service_databases["order"])
    consumer = RefusingConsumer()
    health_port = free_port()
    # The consumer's worker stands in for notification-service's: it serves its internal API.
    notification_routes, engine = internal_routes("notification", service_databases["notification"])
    ops = ops_settings(
        internal_apis | {"notification": f"http://127.0.0.1:{health_port}"}, messaging
    )
    app = build_app(console_settings(), ops)
    worker = consumer.worker(
        messaging,
        service_databases,
        health_port=health_port,
        routes=notification_routes,
        operator_token=OPERATOR_TOKEN,
    )

    async with (
        running(worker),
        logged_in_client(app) as client,
    ):

        async def two_dead_letters() -> bool:
            return len(await list_dead_letters(ops)) == 2

        await eventually(two_dead_letters, within=90, what="both orders' dead letters")
        letters = {letter.key: letter for letter in await list_dead_letters(ops)}
        first, other = letters[str(placed_order.id)], letters[str(second.id)]

        listed = await client.get("/dead-letters", params={"group": "notification-service"})
        assert f'href="/dead-letters/notification-service/{first.id}"' in listed.text
        assert f'href="/dead-letters/notification-service/{other.id}"' in listed.text
        shown = await client.get(f"/dead-letters/notification-service/{first.id}")
        assert REFUSAL in shown.text
        assert placed_order.number in shown.text
        assert "(json," in shown.text

        consumer.refusing = False
        confirmation = await client.get(f"/dead-letters/notification-service/{first.id}/redrive")
        redriven = await client.post(
            f"/dead-letters/notification-service/{first.id}/redrive",
            data={"csrf_token": csrf_of(confirmation)},
        )
        assert redriven.status_code == 303, redriven.text

        async def first_sent() -> bool:
            return consumer.sent == [placed_order.id]

        await eventually(first_sent, within=60, what="the redriven order's e-mail")

        confirmation = await client.get(f"/dead-letters/notification-service/{other.id}/purge")
        purged = await client.post(
            f"/dead-letters/notification-service/{other.id}/purge",
            data={"csrf_token": csrf_of(confirmation)},
        )
        assert purged.status_code == 303, purged.text
        after = await client.get("/dead-letters")
        consumers = await client.get("/consumers")
        timeline = await client.get(f"/orders/{placed_order.id}")

    await engine.dispose()
    assert "No dead letters" in after.text
    assert consumer.sent == [placed_order.id]  # the purged one never went back
    assert consumers.status_code == 200, consumers.text
    counts = consumers.text[consumers.text.index('<th scope="row">notification-service</th>') :]
    assert [cell.rsplit(">", 1)[-1] for cell in counts.split("</td>")[:2]] == ["1", "2"]
    assert "order.created published" in timeline.text
    assert "e-mail sent: order_confirmation" in timeline.text
