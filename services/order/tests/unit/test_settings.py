"""Development defaults and weak secrets are refused at start-up in production, each named
by its variable and never shown; no process starts without saying where it runs."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from pydantic import SecretStr, ValidationError

from shop.messaging import KafkaSettings, MessagingSettings
from shop.messaging.internal import DEVELOPMENT_OPERATOR_TOKEN
from shop.order.settings import DEVELOPMENT_JWT_SECRET, OrderSettings
from shop.simulators.identity import DEVELOPMENT_SIGNING_KEY

# On Kafka, production takes a login over TLS only (PLAINTEXT is refused).
DEPLOYABLE = MessagingSettings(
    transport="kafka",
    namespace="prod",
    kafka=KafkaSettings(
        security_protocol="SASL_SSL",
        sasl_username="order-service",
        sasl_password=SecretStr("r3al-scram-password-of-production-0123"),
    ),
)
REAL_SECRET = "r3al-jwt-key-of-production-0123456789"
PRODUCTION: dict[str, Any] = {
    "environment": "production",
    "jwt_secret": SecretStr(REAL_SECRET),
    "jwt_issuer": "https://id.skincare-shop.example",
    "jwt_audience": "skincare-shop",
    "messaging": DEPLOYABLE,
    "operator_token": SecretStr("r3al-operator-token-of-production-0123"),
}


def refusal(**changed: Any) -> str:
    with pytest.raises(ValidationError) as refused:
        OrderSettings(**(PRODUCTION | changed))
    return str(refused.value)


def test_without_an_environment_the_settings_name_the_variable(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("SHOP_ORDER_ENVIRONMENT", raising=False)
    with pytest.raises(ValidationError, match="SHOP_ORDER_ENVIRONMENT must be set"):
        OrderSettings()


def test_the_environment_is_read_from_its_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SHOP_ORDER_ENVIRONMENT", "development")
    assert OrderSettings().environment == "development"


def test_production_with_every_development_default_names_each_one() -> None:
    with pytest.raises(ValidationError) as refused:
        OrderSettings(environment="production")

    named = (
        "SHOP_ORDER_MESSAGING__TRANSPORT is memory",
        "SHOP_ORDER_MESSAGING__NAMESPACE is empty",
        "SHOP_ORDER_JWT_SECRET must not be the development value",
        "SHOP_ORDER_JWT_ISSUER must be set in production",
        "SHOP_ORDER_JWT_AUDIENCE must be set in production",
        "SHOP_ORDER_OPERATOR_TOKEN must be set",
    )
    assert [problem for problem in named if problem not in str(refused.value)] == []


def test_the_good_production_configuration_starts() -> None:
    settings = OrderSettings(**PRODUCTION)

    assert settings.messaging.transport == "kafka"
    assert settings.jwt_leeway_seconds == 30


@pytest.mark.parametrize(
    ("secret", "problem"),
    [
        ("", "SHOP_ORDER_JWT_SECRET must be set"),
        ("x" * 31, "SHOP_ORDER_JWT_SECRET must be at least 32 bytes"),
        (DEVELOPMENT_JWT_SECRET, "SHOP_ORDER_JWT_SECRET must not be the development value"),
    ],
)
def test_a_weak_jwt_secret_is_refused_by_name_and_never_shown(secret: str, problem: str) -> None:
    message = refusal(jwt_secret=SecretStr(secret))

    assert problem in message
    if secret:
        assert secret not in message


def test_thirty_two_bytes_are_counted_as_bytes_not_characters() -> None:
    assert OrderSettings(**(PRODUCTION | {"jwt_secret": SecretStr("é" * 16)}))


@pytest.mark.parametrize("missing", ["jwt_issuer", "jwt_audience"])
def test_production_checks_the_issuer_and_the_audience(missing: str) -> None:
    assert f"SHOP_ORDER_{missing.upper()} must be set in production" in refusal(**{missing: None})


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
    assert refused in refusal(messaging=messaging)


def test_development_and_tests_keep_the_defaults() -> None:
    assert OrderSettings(environment="development").messaging.transport == "memory"
    assert OrderSettings(environment="test").messaging.namespace == ""
    assert OrderSettings(environment="test", jwt_secret=SecretStr("")).jwt_issuer is None


def test_tracing_is_off_by_default_and_set_by_its_variables(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    assert OrderSettings(environment="test").tracing.exporter == "none"
    monkeypatch.setenv("SHOP_ORDER_TRACING__EXPORTER", "file")
    monkeypatch.setenv("SHOP_ORDER_TRACING__FILE_DIR", str(tmp_path))
    tracing = OrderSettings(environment="test").tracing
    assert (tracing.exporter, tracing.file_dir) == ("file", tmp_path)


def test_a_short_operator_token_is_refused_by_name_and_never_shown() -> None:
    problem = refusal(operator_token=SecretStr("short-operator-token"))
    assert "SHOP_ORDER_OPERATOR_TOKEN must be at least 32 bytes" in problem
    assert "short-operator-token" not in problem


def test_the_development_key_is_the_development_identity_providers() -> None:
    # make run's shopctl token signs as the development identity provider does; order-service
    # must check its tokens with the same key out of the box.
    assert DEVELOPMENT_JWT_SECRET == DEVELOPMENT_SIGNING_KEY


def test_the_development_operator_token_is_refused_in_production() -> None:
    # It is in the repository (devstack.toml, compose's .env.example): anyone could use it.
    problem = refusal(operator_token=SecretStr(DEVELOPMENT_OPERATOR_TOKEN))
    assert "SHOP_ORDER_OPERATOR_TOKEN must not be the development value" in problem


def test_idempotency_keys_are_kept_a_week_by_default() -> None:
    assert OrderSettings(environment="test").retention.idempotency_keys == timedelta(days=7)


def test_idempotency_keys_kept_less_than_a_day_are_refused_with_the_rule() -> None:
    with pytest.raises(ValidationError) as refused:
        OrderSettings.model_validate(
            {"environment": "test", "retention": {"idempotency_keys": "PT23H"}}
        )
    message = str(refused.value)
    assert "retention.idempotency_keys" in message
    assert "must be at least 1 day" in message
    assert "places a second order" in message


def test_the_inbox_kept_less_than_the_longest_redelivery_is_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("SHOP_ORDER_RETENTION__INBOX", "P7D")
    with pytest.raises(ValidationError, match="must be at least 14 days"):
        OrderSettings(environment="test")


def test_retentions_are_read_from_their_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SHOP_ORDER_RETENTION__INBOX", "P60D")
    monkeypatch.setenv("SHOP_ORDER_RETENTION__IDEMPOTENCY_KEYS", "P2D")
    retention = OrderSettings(environment="test").retention
    assert (retention.inbox, retention.idempotency_keys) == (timedelta(days=60), timedelta(days=2))
