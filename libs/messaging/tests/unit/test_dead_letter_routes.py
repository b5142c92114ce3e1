"""Every worker serves its own consumers' dead letters on its port (the internal API the
console and shopctl may read), on the memory transport: listed, shown, purged, and redriven
to the consumer that failed; an unknown group or letter is a 4xx that says so."""

from __future__ import annotations

import uuid

import httpx

from shop.contracts import Envelope, OrderCreated, examples, wrap
from shop.messaging import MessageContext, MessagingSettings, PermanentError, Router, Worker
from shop.messaging.testing import eventually, publish, running
from shop.messaging.transports import create_transport

GROUP = "notification-service"
REFUSAL = "no such mailbox"
DEAD_LETTERS = "/internal/v1/dead-letters"


def order_created() -> Envelope[OrderCreated]:
    order_id = uuid.uuid4()
    example = examples.examples()[OrderCreated]
    assert isinstance(example, OrderCreated)
    return wrap(example.model_copy(update={"order_id": order_id}), key=str(order_id))


async def test_a_workers_dead_letters_are_listed_shown_purged_and_redriven() -> None:
    refusing = True
    handled: list[str] = []

    async def send(event: OrderCreated, ctx: MessageContext) -> None:
        if refusing:
            raise PermanentError(REFUSAL)
        handled.append(str(event.order_id))

    router = Router(GROUP)
    router.subscriber(OrderCreated, transactional=False)(send)
    settings = MessagingSettings(transport="memory", time_scale=0.01)
    transport = create_transport(settings)
    worker = Worker(settings, transport, routers=[router], health_port=0)
    first, second = order_created(), order_created()

    async with running(worker):
        assert worker.health is not None
        base = f"http://127.0.0.1:{worker.health.port}"
        async with httpx.AsyncClient(base_url=base) as client:
            await publish(transport, first, second)

            async def both_dead() -> bool:
                return len((await client.get(DEAD_LETTERS)).json()["dead_letters"]) == 2

            await eventually(both_dead, within=10, what="both dead letters")
            letters = {
                letter["key"]: letter
                for letter in (await client.get(DEAD_LETTERS, params={"group": GROUP})).json()[
                    "dead_letters"
                ]
            }
            kept, dropped = letters[first.key], letters[second.key]
            assert (kept["error_type"], kept["error_message"]) == ("PermanentError", REFUSAL)
            assert kept["message_type"] == "order.created"

            shown = await client.get(f"{DEAD_LETTERS}/{GROUP}/{kept['id']}")
            purged = await client.post(f"{DEAD_LETTERS}/{GROUP}/{dropped['id']}/purge")
            refusing = False
            redriven = await client.post(f"{DEAD_LETTERS}/{GROUP}/{kept['id']}/redrive")

            async def redriven_handled() -> bool:
                return handled == [str(first.payload.order_id)]

            await eventually(redriven_handled, within=10, what="the redriven message")
            after = (await client.get(DEAD_LETTERS)).json()["dead_letters"]
            gone = await client.get(f"{DEAD_LETTERS}/{GROUP}/{dropped['id']}")
            stranger = await client.get(DEAD_LETTERS, params={"group": "billing-service"})

    assert shown.status_code == 200
    assert shown.json() == kept
    assert (purged.status_code, purged.json()) == (
        200,
        {"group": GROUP, "purged": [dropped["id"]], "count": 1},
    )
    assert (redriven.status_code, redriven.json()["id"]) == (200, kept["id"])
    assert after == []
    assert gone.status_code == 404
    assert dropped["id"] in gone.json()["detail"]
    assert stranger.status_code == 400
    assert GROUP in stranger.json()["detail"]
