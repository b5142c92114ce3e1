"""Development defaults are refused at start-up in production, all named at once."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import SecretStr, ValidationError

from shop.messaging import MessagingSettings
from shop.order.settings import OrderSettings

DEPLOYABLE = MessagingSettings(transport="kafka", namespace="prod")


def test_production_with_every_development_default_names_each_one() -> None:
    with pytest.raises(ValidationError) as refused:
        OrderSettings(environment="production")

    named = (
        "SHOP_ORDER_MESSAGING__TRANSPORT is memory",
        "SHOP_ORDER_MESSAGING__NAMESPACE is empty",
        "SHOP_ORDER_JWT_SECRET must be set outside development",
    )
    assert [problem for problem in named if problem not in str(refused.value)] == []


def test_production_with_a_real_secret_a_broker_and_a_namespace_starts() -> None:
    settings = OrderSettings(
        environment="production", jwt_secret=SecretStr("x" * 32), messaging=DEPLOYABLE
    )

    assert settings.messaging.transport == "kafka"


@pytest.mark.parametrize(
    ("messaging", "refused"),
    [
        (MessagingSettings(transport="memory", namespace="prod"), "TRANSPORT is memory"),
        (MessagingSettings(transport="sqs", namespace=""), "NAMESPACE is empty"),
    ],
)
def test_production_refuses_the_memory_transport_and_a_missing_namespace(
    messaging: MessagingSettings, refused: str
) -> None:
    with pytest.raises(ValidationError, match=refused):
        OrderSettings(environment="production", jwt_secret=SecretStr("x" * 32), messaging=messaging)


def test_development_and_tests_keep_the_defaults() -> None:
    assert OrderSettings().messaging.transport == "memory"
    assert OrderSettings(environment="test").messaging.namespace == ""


def test_tracing_is_off_by_default_and_set_by_its_variables(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    assert OrderSettings().tracing.exporter == "none"
    monkeypatch.setenv("SHOP_ORDER_TRACING__EXPORTER", "file")
    monkeypatch.setenv("SHOP_ORDER_TRACING__FILE_DIR", str(tmp_path))
    tracing = OrderSettings().tracing
    assert (tracing.exporter, tracing.file_dir) == ("file", tmp_path)
