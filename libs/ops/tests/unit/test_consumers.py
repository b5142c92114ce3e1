from __future__ import annotations

from datetime import UTC, datetime

import pytest
from prometheus_client import generate_latest

from shop.messaging.breaker import BreakerState
from shop.messaging.metrics import Metrics
from shop.messaging.outcome import Ack, DeadLetter, Failure, Retry
from shop.messaging.pipeline import OutcomeRecord
from shop.ops.consumers import ConsumerCounts, parse_breakers, parse_counts
from shop.ops.errors import OpsError

NOW = datetime(2026, 12, 3, tzinfo=UTC)
FAILURE = Failure("EmailUnavailable", "451 try again later")


def record(group: str, subscriber: str, outcome: Ack | Retry | DeadLetter) -> OutcomeRecord:
    return OutcomeRecord(group, subscriber, "order.created", 1, outcome, 0.01)


def test_a_workers_counters_are_summed_per_consumer_group() -> None:
    metrics = Metrics()
    for outcome in (
        Ack(),
        Ack(duplicate=True),
        Retry(2.0, 1, FAILURE, NOW),
        Retry(4.0, 2, FAILURE, NOW),
        DeadLetter(FAILURE, 3, NOW, NOW),
    ):
        metrics.observe(record("notification-service", "send_order_confirmation", outcome))
    metrics.observe(record("notification-service", "send_payment_receipt", Ack()))
    metrics.observe(record("payment-service", "open_payment", Ack()))

    counts = parse_counts(generate_latest(metrics.registry).decode())

    assert counts == {
        "notification-service": ConsumerCounts("notification-service", 3, 3, 2, 1),
        "payment-service": ConsumerCounts("payment-service", 1, 0, 0, 0),
    }


def test_metrics_of_a_worker_that_has_handled_nothing_count_no_group() -> None:
    assert parse_counts(generate_latest(Metrics().registry).decode()) == {}


def test_what_is_not_prometheus_text_is_refused_in_one_line() -> None:
    with pytest.raises(OpsError, match="not Prometheus metrics"):
        parse_counts("<html>502 Bad Gateway</html>\n{")


def test_each_providers_breaker_is_read_with_its_state() -> None:
    metrics = Metrics()
    metrics.breaker_changed("smtp", BreakerState.OPEN)
    metrics.breaker_changed("gateway", BreakerState.CLOSED)
    text = generate_latest(metrics.registry).decode()
    assert parse_breakers(text) == ("gateway closed", "smtp open")
    assert parse_breakers(generate_latest(Metrics().registry).decode()) == ()
