"""Dead-letter metadata, header hygiene, log masking, relay ordering after partial failure,
SNS batch answers."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

import asyncpg
import pytest
from prometheus_client import CollectorRegistry

from shop.messaging import headers as h
from shop.messaging.deadletters import (
    DeadLetterFilter,
    dead_letter_headers,
    read_dead_letter,
)
from shop.messaging.health import HealthServer
from shop.messaging.logging import mask_emails
from shop.messaging.message import Delivery, OutgoingMessage
from shop.messaging.outcome import DeadLetter, Failure
from shop.messaging.relay import Relay, RelaySettings, _sent_in_key_order, asyncpg_dsn
from shop.messaging.transports.kafka.topology import dead_letter_topic
from shop.messaging.transports.kafka.wire import decode_headers
from shop.messaging.transports.memory import MemoryBroker, MemoryTransport
from shop.messaging.transports.sqs.client import refused_entries
from shop.messaging.transports.sqs.topology import SqsQueues, dead_letter_queue_attributes

FIRST = datetime(2026, 12, 1, 8, 0, tzinfo=UTC)
LAST = datetime(2026, 12, 1, 8, 5, tzinfo=UTC)


def test_dead_letter_metadata_round_trips_and_keeps_the_original_headers() -> None:
    delivery = Delivery(
        body=b"{}",
        headers={h.MESSAGE_TYPE: "order.created", "traceparent": "t", h.ATTEMPT: "4"},
        source="shop-order-created",
        attempt=5,
    )
    outcome = DeadLetter(Failure("RuntimeError", "boom"), 5, FIRST, LAST)
    stored = dead_letter_headers("notification-service", delivery, outcome)
    assert stored[h.DEAD_LETTER_ATTEMPTS] == "5"
    assert h.ATTEMPT not in stored
    letter = read_dead_letter("7", b"{}", stored)
    assert letter.headers == {h.MESSAGE_TYPE: "order.created", "traceparent": "t"}
    assert (letter.group, letter.source, letter.message_type) == (
        "notification-service", "shop-order-created", "order.created",
    )  # fmt: skip
    assert (letter.error_type, letter.error_message, letter.attempts) == ("RuntimeError", "boom", 5)
    assert (letter.first_failure_at, letter.last_failure_at) == (FIRST, LAST)


def test_dead_letter_filter_matches_every_given_field() -> None:
    stored = dead_letter_headers(
        "g",
        Delivery(b"{}", {h.MESSAGE_TYPE: "order.paid"}, "src"),
        DeadLetter(Failure("SMTPRecipientsRefused", "550 no such user"), 1, FIRST, LAST),
    )
    letter = read_dead_letter("1", b"{}", stored)
    assert DeadLetterFilter().matches(letter)
    assert DeadLetterFilter(message_type="order.paid", error_contains="NO SUCH").matches(letter)
    assert not DeadLetterFilter(message_type="order.created").matches(letter)
    assert not DeadLetterFilter(error_type="TimeoutError").matches(letter)


def test_emails_are_masked_in_logs() -> None:
    event = {"event": "sent to ayu.lestari@example.com", "count": 3}
    assert mask_emails(None, "info", event) == {"event": "sent to a***@example.com", "count": 3}


def test_after_a_partial_failure_nothing_behind_a_failed_message_of_its_key_is_marked() -> None:
    messages = [OutgoingMessage("t", key, b"") for key in ("a", "b", "a", "c", "b")]
    assert _sent_in_key_order(messages, failed={0}) == [1, 3, 4]
    assert _sent_in_key_order(messages, failed={1, 3}) == [0, 2]
    assert _sent_in_key_order(messages, failed=set()) == [0, 1, 2, 3, 4]


def test_sqlalchemy_urls_become_asyncpg_dsns() -> None:
    assert asyncpg_dsn("postgresql+asyncpg://u@h:5/db") == "postgresql://u@h:5/db"
    assert asyncpg_dsn("postgresql://u@h/db") == "postgresql://u@h/db"


def test_a_batch_entry_sns_names_neither_published_nor_failed_counts_as_refused() -> None:
    response = {
        "Successful": [{"Id": "0", "MessageId": "m-0"}],
        "Failed": [{"Id": "1", "Code": "InvalidParameter", "Message": "too long"}],
    }
    refused = refused_entries([0, 1, 2], response)
    assert refused[1] == "InvalidParameter: too long"
    assert sorted(refused) == [1, 2], "entry 2 was never said to be published"
    assert refused_entries([0], {"Successful": [{"Id": "0", "MessageId": "m-0"}]}) == {}


async def test_a_relay_whose_connection_breaks_mid_statement_connects_again() -> None:
    # What asyncpg raises when a statement meets a connection the server has just closed
    # (a Postgres restart under load): the relay reconnects, it does not end the worker.
    relay = Relay(
        "postgresql://shop@127.0.0.1:1/shop",
        MemoryTransport(MemoryBroker()),
        settings=RelaySettings(backoff_initial=0.001),
    )
    failures = [
        asyncpg.InternalClientError("cannot switch to state 12; another operation is in progress"),
        asyncpg.InterfaceError("connection is closed"),
    ]

    async def serve() -> None:
        if failures:
            raise failures.pop(0)
        relay.stop()

    relay._serve = serve  # type: ignore[method-assign]
    await asyncio.wait_for(relay.run(), 5)
    assert failures == []


def test_reading_a_kafka_record_drops_only_what_faststreams_publish_added() -> None:
    # FastStream adds an empty content-type and a correlation_id copied from the shop's
    # own header; a foreign producer's headers of those names are the message's.
    ours = [
        ("x-correlation-id", b"c-1"),
        ("content-type", b""),
        ("correlation_id", b"c-1"),
        ("x-event-id", b"e-1"),
    ]
    assert decode_headers(ours) == {"x-correlation-id": "c-1", "x-event-id": "e-1"}
    foreign = [("content-type", b"application/json"), ("correlation_id", b"theirs")]
    assert decode_headers(foreign) == {
        "content-type": "application/json",
        "correlation_id": "theirs",
    }


def test_an_empty_operator_token_is_refused_rather_than_opening_the_routes() -> None:
    with pytest.raises(ValueError, match="operator token"):
        HealthServer(CollectorRegistry(), lambda: {}, host="127.0.0.1", port=0, operator_token="")


def test_a_dead_letter_topic_is_created_with_its_retention_explicit() -> None:
    topic = dead_letter_topic(
        "shop-payment-service-dlq", partitions=6, replication_factor=3, retention_ms=604_800_000
    )
    assert (topic.name, topic.num_partitions, topic.replication_factor) == (
        "shop-payment-service-dlq",
        6,
        3,
    )
    assert topic.topic_configs == {"retention.ms": "604800000"}


def test_a_dead_letter_queue_keeps_letters_as_long_as_sqs_allows_at_most() -> None:
    queues = SqsQueues("q", "url", "arn:q", "dlq-url", "arn:dlq")
    assert (
        dead_letter_queue_attributes(queues, retention_seconds=3600)["MessageRetentionPeriod"]
        == "3600"
    )
    assert dead_letter_queue_attributes(queues, retention_seconds=30 * 24 * 3600)[
        "MessageRetentionPeriod"
    ] == str(14 * 24 * 3600)
