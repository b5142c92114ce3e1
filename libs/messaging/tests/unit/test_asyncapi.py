"""A service's AsyncAPI document, built from a made-up service: the topics and consumer
groups are the Kafka transport's, every message carries its contract's envelope schema
and the headers the shop writes, and the components are named as AsyncAPI requires."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from shop.contracts import CancelUnpaidOrder, ConsumerGroup, OrderCreated, PaymentReceived
from shop.contracts.asyncapi import DEAD_LETTER_TOPIC_TAG, DELAY_TOPIC_TAG
from shop.contracts.snapshots import wire_schema
from shop.messaging import MessageContext, Naming, Router
from shop.messaging import headers as h
from shop.messaging.asyncapi import ServiceBus, build_document, unwired
from shop.messaging.transports.kafka.topology import delay_topics, group_id

COMPONENT_NAME = re.compile(r"^[\w\d\.\-_]+$")
"""The names AsyncAPI 3.0.0 allows for components (its JSON Schema's patternProperties)."""


def order_router(store: Any) -> Router:
    router = Router(ConsumerGroup.ORDER)

    @router.subscriber(PaymentReceived, max_attempts=3)
    async def mark_paid(event: PaymentReceived, ctx: MessageContext) -> None:
        await store.mark_paid(event)

    @router.subscriber(CancelUnpaidOrder)
    async def cancel_unpaid(command: CancelUnpaidOrder, ctx: MessageContext) -> None:
        await store.cancel(command.order_id)

    return router


def service(**changes: Any) -> ServiceBus:
    fields: dict[str, Any] = {
        "name": "order-service",
        "version": "1.2.3",
        "description": "Takes orders.",
        "publishes": (OrderCreated, CancelUnpaidOrder),
        "routers": (order_router(unwired("OrderStore")),),
        **changes,
    }
    return ServiceBus(**fields)


def resolve(document: dict[str, Any], reference: str) -> Any:
    node: Any = document
    for part in reference.removeprefix("#/").split("/"):
        node = node[part]
    return node


def message_of(document: dict[str, Any], channel: str) -> dict[str, Any]:
    [reference] = document["channels"][channel]["messages"].values()
    message: dict[str, Any] = resolve(document, reference["$ref"])
    return message


def payload_refs(message: dict[str, Any]) -> list[str]:
    payload = message["payload"]
    return [item["$ref"] for item in payload.get("oneOf", [payload])]


def test_the_document_is_asyncapi_3_titled_after_the_service() -> None:
    document = build_document(service())

    assert document["asyncapi"] == "3.0.0"
    assert document["info"] == {
        "title": "order-service",
        "version": "1.2.3",
        "description": "Takes orders.",
    }
    assert document["servers"]["development"]["protocol"] == "kafka"


def test_each_published_contract_is_sent_to_its_topic_with_its_envelope_schema() -> None:
    document = build_document(service())

    operation = document["operations"]["order.created.v1"]
    assert operation["action"] == "send"
    assert operation["channel"] == {"$ref": "#/channels/order.created.v1"}
    assert document["channels"]["order.created.v1"]["address"] == Naming().topic(OrderCreated)
    message = message_of(document, "order.created.v1")
    assert payload_refs(message) == ["#/components/schemas/order.created.v1"]
    assert message["headers"]["properties"][h.MESSAGE_TYPE]["enum"] == ["order.created"]
    assert message["correlationId"]["location"] == f"$message.header#/{h.CORRELATION_ID}"


def test_the_envelope_schema_is_the_contracts_snapshot_schema() -> None:
    document = build_document(service())
    schemas = document["components"]["schemas"]

    snapshot = wire_schema(OrderCreated)
    definitions = snapshot.pop("$defs")
    moved = json.loads(json.dumps(snapshot).replace("#/$defs/", "#/components/schemas/"))
    assert schemas["order.created.v1"] == moved
    for name, definition in definitions.items():
        moved = json.loads(json.dumps(definition).replace("#/$defs/", "#/components/schemas/"))
        assert schemas[name] == moved


def test_each_subscriber_receives_its_contracts_topic_under_the_consumers_group() -> None:
    naming = Naming("stack-a")
    document = build_document(service(), naming=naming)

    operation = document["operations"]["order-service:mark_paid"]
    assert operation["action"] == "receive"
    assert operation["bindings"]["kafka"]["groupId"] == {
        "type": "string",
        "enum": [group_id(naming, "order-service")],
    }
    channel = document["channels"]["order-service:mark_paid"]
    assert channel["address"] == naming.topic(PaymentReceived) == "stack-a-shop-payment-received"
    assert "tried up to 3 times" in channel["description"]
    assert payload_refs(message_of(document, "order-service:mark_paid")) == [
        "#/components/schemas/payment.received.v1"
    ]


def test_the_consumer_reads_its_delay_topics_and_sends_its_dead_letters() -> None:
    router = order_router(unwired("OrderStore"))
    document = build_document(service(routers=(router,)))

    delays = delay_topics(Naming(), router)
    assert delays[0] == "shop-order-service-retry-0s"
    for topic in delays:
        assert document["operations"][topic]["action"] == "receive"
        assert document["operations"][topic]["bindings"]["kafka"]["groupId"]["enum"] == [
            "order-service"
        ]
        message = message_of(document, topic)
        assert payload_refs(message) == [
            "#/components/schemas/payment.received.v1",
            "#/components/schemas/order.cancel_unpaid.v1",
        ]
        assert message["headers"]["properties"].keys() >= h.DELIVERY_KEYS

    dead_letters = Naming().dead_letters("order-service")
    assert document["operations"][dead_letters]["action"] == "send"
    assert "bindings" not in document["operations"][dead_letters]
    headers = message_of(document, dead_letters)["headers"]
    assert h.DEAD_LETTER_KEYS | {h.DEAD_LETTER_RESOLVES} <= headers["properties"].keys()


def test_only_the_consumers_own_topics_are_tagged_as_delay_or_dead_letter_topics() -> None:
    router = order_router(unwired("OrderStore"))
    document = build_document(service(routers=(router,)))

    tagged = {
        name: [tag["name"] for tag in operation.get("tags", [])]
        for name, operation in document["operations"].items()
    }

    naming = Naming()
    assert {name for name, tags in tagged.items() if tags == [DELAY_TOPIC_TAG]} == set(
        delay_topics(naming, router)
    )
    assert [name for name, tags in tagged.items() if tags == [DEAD_LETTER_TOPIC_TAG]] == [
        naming.dead_letters("order-service")
    ]
    contracts = {"order.created.v1", "order.cancel_unpaid.v1"} | {
        f"order-service:{subscriber.name}" for subscriber in router
    }
    assert {name for name, tags in tagged.items() if not tags} == contracts


def test_every_channel_is_a_topic_the_transport_names() -> None:
    router = order_router(unwired("OrderStore"))
    naming = Naming()
    document = build_document(service(routers=(router,)))

    addresses = {channel["address"] for channel in document["channels"].values()}

    assert addresses == {
        naming.topic(OrderCreated),
        naming.topic(CancelUnpaidOrder),
        naming.topic(PaymentReceived),
        *delay_topics(naming, router),
        naming.dead_letters("order-service"),
    }


def test_a_service_that_only_consumes_sends_nothing_but_its_dead_letters() -> None:
    document = build_document(service(publishes=()))

    sent = [op for op in document["operations"].values() if op["action"] == "send"]

    assert [op["channel"]["$ref"] for op in sent] == ["#/channels/shop-order-service-dlq"]


def test_components_have_names_asyncapi_accepts_and_every_reference_resolves() -> None:
    document = build_document(service())

    for section in document["components"].values():
        assert all(COMPONENT_NAME.match(name) for name in section), list(section)
    references = re.findall(r'"\$ref": "([^"]+)"', json.dumps(document))
    assert references
    for reference in references:
        assert resolve(document, reference) is not None


def test_a_router_built_to_be_documented_fails_loudly_if_it_ever_runs() -> None:
    store = unwired("OrderStore")

    with pytest.raises(RuntimeError, match="OrderStore is not wired"):
        store.mark_paid(None)


@pytest.mark.parametrize(
    ("changes", "refusal"),
    [
        ({"name": "Order Service"}, "not a service name"),
        ({"publishes": (OrderCreated, OrderCreated)}, "listed twice"),
        (
            {"routers": (order_router(None), order_router(None))},
            "two routers share a consumer group",
        ),
    ],
)
def test_a_service_description_that_cannot_be_documented_is_refused(
    changes: dict[str, Any], refusal: str
) -> None:
    with pytest.raises(ValueError, match=refusal):
        service(**changes)
