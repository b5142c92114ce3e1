"""The small parts: rendering, parsing, the services' own descriptions, tokens."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, timezone

import pytest
from fastapi import HTTPException
from pydantic import SecretStr

from shop.contracts import ConsumerGroup
from shop.messaging import Naming
from shop.messaging.asyncapi import discover
from shop.messaging.transports.kafka.topology import delay_topics, event_topics
from shop.ops.errors import Unreachable, redacted
from shop.ops.render import jsonable, moment, seconds
from shop.ops.services import consumer_groups, in_namespace, service_of, shop_services
from shop.ops.settings import OpsSettings
from shop.ops.tokens import customer_token
from shop.order.api.auth import authenticate
from shop.order.settings import OrderSettings


@dataclass(frozen=True)
class Sample:
    id: uuid.UUID
    at: datetime
    body: bytes
    binary: bytes
    tags: tuple[str, ...]


def test_results_become_plain_json_data() -> None:
    sample = Sample(
        id=uuid.UUID(int=1),
        at=datetime(2026, 12, 3, 9, 30, tzinfo=UTC),
        body=b'{"a": 1}',
        binary=b"\xff\x00",
        tags=("x", "y"),
    )
    assert jsonable(sample) == {
        "id": "00000000-0000-0000-0000-000000000001",
        "at": "2026-12-03T09:30:00+00:00",
        "body": '{"a": 1}',
        "binary": {"base64": "/wA="},
        "tags": ["x", "y"],
    }


@pytest.mark.parametrize(
    ("value", "text"),
    [(None, "-"), (0.042, "42 ms"), (3.5, "3.50 s"), (125, "2 min 5 s"), (7300, "2 h 1 min")],
)
def test_durations_read_in_the_unit_that_suits_them(value: float | None, text: str) -> None:
    assert seconds(value) == text


def test_moments_read_to_the_second_in_utc_or_their_own_offset() -> None:
    assert moment(datetime(2026, 12, 3, 9, 30, 5, 123, tzinfo=UTC)) == "2026-12-03 09:30:05Z"
    wib = timezone(timedelta(hours=7))
    assert moment(datetime(2026, 12, 3, 16, 30, tzinfo=wib)) == "2026-12-03 16:30:00+07:00"
    assert moment(None) == "-"


def test_a_password_never_reaches_a_message() -> None:
    assert (
        redacted("postgresql://shop:s3cret@db:5432/order") == "postgresql://shop:***@db:5432/order"
    )
    assert redacted("postgresql://postgres@db/order") == "postgresql://postgres@db/order"
    assert "make run" in str(Unreachable("order-service", "http://127.0.0.1:8001"))


def test_the_consumer_groups_are_those_the_services_describe() -> None:
    names = [service.name for service in shop_services()]
    assert names == ["notification-service", "order-service", "payment-service"]
    assert {c.group for c in consumer_groups()} == {group.value for group in ConsumerGroup}
    assert service_of("payment-service") == "payment-service"
    outboxes = {service.name for service in shop_services() if service.has_outbox}
    assert outboxes == {"order-service", "payment-service"}


def test_each_group_reads_the_topics_its_workers_router_subscribes_to() -> None:
    # The documents against the services' own code, which this library never imports.
    routers = {router.group: router for bus in discover() for router in bus.routers}
    published = {bus.name: {Naming().topic(c) for c in bus.publishes} for bus in discover()}

    for consumer in consumer_groups():
        router = routers[consumer.group]
        assert list(consumer.event_topics) == event_topics(Naming(), router)
        assert list(consumer.delay_topics) == delay_topics(Naming(), router)
    for service in shop_services():
        assert set(service.publishes) == published[service.name]


def test_a_namespace_prefixes_the_documents_names_as_the_transports_do() -> None:
    naming = Naming("demo")
    assert in_namespace("demo", "shop-order-created") == naming.topic("order.created")
    assert in_namespace("demo", "shop-order-service-retry-2s") == naming.delay_topic(
        "order-service", 2
    )
    assert in_namespace("", "shop-order-created") == Naming().topic("order.created")


def test_a_token_is_one_order_service_accepts_for_that_customer() -> None:
    settings = OpsSettings(
        environment="test", jwt_secret=SecretStr("a-key-of-this-test-long-enough-for-hs256")
    )
    token = customer_token(settings, "42", "ayu@example.com", valid_for=timedelta(minutes=5))
    customer = authenticate(
        OrderSettings(
            environment="test", jwt_secret=SecretStr("a-key-of-this-test-long-enough-for-hs256")
        ),
        token,
    )
    assert (customer.id, customer.email) == ("42", "ayu@example.com")


def test_a_token_carries_the_audience_order_service_checks() -> None:
    key = SecretStr("a-key-of-this-test-long-enough-for-hs256")
    token = customer_token(
        OpsSettings(environment="test", jwt_secret=key, jwt_audience="shop-frontend"), "42", "a@b.c"
    )
    checking = OrderSettings(environment="test", jwt_secret=key, jwt_audience="shop-frontend")
    assert authenticate(checking, token).id == "42"
    without = customer_token(OpsSettings(environment="test", jwt_secret=key), "42", "a@b.c")
    with pytest.raises(HTTPException, match="401"):
        authenticate(checking, without)
