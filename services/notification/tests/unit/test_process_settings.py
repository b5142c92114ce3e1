"""In production each process is judged on the parts of the settings it uses, and only
those: the worker on the bus, the operator's token and how it sends, the migration on
nothing but the database; a process that does not say which it is, on all of them."""

from __future__ import annotations

from typing import Any, get_args

import pytest
from pydantic import SecretStr, ValidationError

from shop.messaging import KafkaSettings, MessagingSettings
from shop.notification.settings import (
    USES,
    FaultSettings,
    NotificationProcess,
    NotificationSettings,
)

WORKER: dict[str, Any] = {
    "operator_token": SecretStr("r3al-operator-token-of-production-0123"),
    "messaging": MessagingSettings(
        transport="kafka",
        namespace="prod",
        kafka=KafkaSettings(
            security_protocol="SASL_SSL",
            sasl_username="notification-service",
            sasl_password=SecretStr("r3al-scram-password-of-production-0123"),
        ),
    ),
}


def refusal(**settings: Any) -> str:
    with pytest.raises(ValidationError) as refused:
        NotificationSettings(environment="production", **settings)
    return str(refused.value)


def test_the_worker_starts_with_its_bus_and_its_operator_token() -> None:
    assert NotificationSettings(environment="production", process="worker", **WORKER)


@pytest.mark.parametrize(
    ("changed", "problem"),
    [
        ({"operator_token": None}, "SHOP_NOTIFICATION_OPERATOR_TOKEN must be set"),
        (
            {"messaging": MessagingSettings(transport="kafka", namespace="prod")},
            "SHOP_NOTIFICATION_MESSAGING__KAFKA__SECURITY_PROTOCOL is PLAINTEXT",
        ),
        ({"faults": FaultSettings(enabled=True)}, "fault injection"),
    ],
)
def test_the_worker_is_still_refused_on_what_it_uses(changed: dict[str, Any], problem: str) -> None:
    assert problem in refusal(process="worker", **(WORKER | changed))


def test_the_migration_starts_without_the_operator_token_or_the_bus() -> None:
    settings = NotificationSettings(environment="production", process="migrate")

    assert settings.operator_token is None
    assert settings.messaging.transport == "memory"


def test_a_process_that_does_not_say_which_it_is_is_judged_on_every_part() -> None:
    problem = refusal()

    assert "SHOP_NOTIFICATION_MESSAGING__TRANSPORT is memory" in problem
    assert "SHOP_NOTIFICATION_OPERATOR_TOKEN must be set" in problem


def test_the_entry_point_s_word_wins_over_a_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SHOP_NOTIFICATION_PROCESS", "migrate")

    assert "SHOP_NOTIFICATION_OPERATOR_TOKEN must be set" in refusal(
        process="worker", **(WORKER | {"operator_token": None})
    )


def test_the_table_says_what_every_process_uses() -> None:
    assert set(USES) == set(get_args(NotificationProcess))
