from __future__ import annotations

from datetime import UTC, datetime

from shop.messaging import StoredDeadLetter
from shop.ops.deadletters import DeadLetterQuery
from shop.ops.services import ConsumerGroupOf

NOW = datetime(2026, 12, 3, tzinfo=UTC)


def letter(
    *,
    message_type: str = "order.created",
    error_type: str = "EmailRejected",
    error_message: str = "550 mailbox unavailable",
    key: str = "6f1c2a4e-8d3b-4c1a-9e2f-0a1b2c3d4e5f",
    body: bytes = b'{"payload": {"order_number": "SK-7KQ4-M2XD"}}',
) -> StoredDeadLetter:
    return StoredDeadLetter(
        id="0-1",
        group="notification-service",
        source="shop-order-created",
        message_type=message_type,
        body=body,
        headers={},
        error_type=error_type,
        error_message=error_message,
        attempts=1,
        first_failure_at=NOW,
        last_failure_at=NOW,
        key=key,
    )


def consumer(service: str, group: str) -> ConsumerGroupOf:
    return ConsumerGroupOf(service=service, group=group)


def test_an_empty_query_takes_every_group_and_matches_every_letter() -> None:
    query = DeadLetterQuery()
    assert query.takes(consumer("order-service", "order-service"))
    assert query.matches(letter())
    assert query.is_everything


def test_service_and_group_choose_the_groups() -> None:
    payment = consumer("payment-service", "payment-service")
    notification = consumer("notification-service", "notification-service")
    assert DeadLetterQuery(service="payment-service").takes(payment)
    assert not DeadLetterQuery(service="payment-service").takes(notification)
    assert DeadLetterQuery(group="notification-service").takes(notification)
    assert not DeadLetterQuery(service="payment-service", group="notification-service").takes(
        notification
    )


def test_type_and_error_type_must_match_exactly() -> None:
    assert DeadLetterQuery(message_type="order.created").matches(letter())
    assert not DeadLetterQuery(message_type="order.paid").matches(letter())
    assert DeadLetterQuery(error_type="EmailRejected").matches(letter())
    assert not DeadLetterQuery(error_type="PermanentError").matches(letter())
    assert not DeadLetterQuery(error_type="EmailRejected").is_everything


def test_contains_finds_text_in_the_error_the_key_or_the_body_in_any_case() -> None:
    assert DeadLetterQuery(contains="MAILBOX").matches(letter())
    assert DeadLetterQuery(contains="6f1c2a4e").matches(letter())
    assert DeadLetterQuery(contains="sk-7kq4").matches(letter())
    assert not DeadLetterQuery(contains="SK-0000").matches(letter())
    assert DeadLetterQuery(contains="x").matches(letter(body=b"\xff\xfex"))
