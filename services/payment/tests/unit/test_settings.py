"""Development defaults and weak secrets are refused at start-up in production, each named
by its variable and never shown; a gateway that is off needs none of its secrets; no
process starts without saying where it runs."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from pydantic import SecretStr, ValidationError

from shop.messaging import KafkaSettings, MessagingSettings
from shop.payment.settings import (
    DEVELOPMENT_MIDTRANS_SERVER_KEY,
    DEVELOPMENT_SHOP_GATEWAY_API_KEY,
    DEVELOPMENT_WEBHOOK_SECRET,
    PaymentSettings,
)

WEBHOOK_SECRET = "whsec_r3al-secret-of-production-0123456789"
PRODUCTION: dict[str, Any] = {
    "environment": "production",
    "gateways": ["shop", "midtrans"],
    "webhook_secrets": [SecretStr(WEBHOOK_SECRET)],
    "shop_gateway_api_key": SecretStr("gwkey_r3al-key-of-production-0123456789"),
    "midtrans_server_key": SecretStr("Mid-server-r3alKeyOfProduction0123"),
    "midtrans_api_url": "https://api.midtrans.com",
    # On Kafka, production takes a login over TLS only (PLAINTEXT is refused).
    "messaging": MessagingSettings(
        transport="kafka",
        namespace="prod",
        kafka=KafkaSettings(
            security_protocol="SASL_SSL",
            sasl_username="payment-service",
            sasl_password=SecretStr("r3al-scram-password-of-production-0123"),
        ),
    ),
    "operator_token": SecretStr("r3al-operator-token-of-production-0123"),
}


def refusal(**changed: Any) -> str:
    with pytest.raises(ValidationError) as refused:
        PaymentSettings(**(PRODUCTION | changed))
    return str(refused.value)


def test_without_an_environment_the_settings_name_the_variable(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("SHOP_PAYMENT_ENVIRONMENT", raising=False)
    with pytest.raises(ValidationError, match="SHOP_PAYMENT_ENVIRONMENT must be set"):
        PaymentSettings()


def test_the_good_production_configuration_starts() -> None:
    settings = PaymentSettings(**PRODUCTION)

    assert settings.gateways == ["shop", "midtrans"]


def test_production_with_the_development_defaults_names_each_one() -> None:
    with pytest.raises(ValidationError) as refused:
        PaymentSettings(environment="production")

    named = (
        "SHOP_PAYMENT_MESSAGING__TRANSPORT is memory",
        "SHOP_PAYMENT_MESSAGING__NAMESPACE is empty",
        "SHOP_PAYMENT_GATEWAYS must be set in production",
        "SHOP_PAYMENT_OPERATOR_TOKEN must be set",
        "SHOP_PAYMENT_WEBHOOK_SECRETS[0] must not be the development value",
        "SHOP_PAYMENT_SHOP_GATEWAY_API_KEY must not be the development value",
        "SHOP_PAYMENT_MIDTRANS_SERVER_KEY must not be the development value",
        "SHOP_PAYMENT_MIDTRANS_API_URL is Midtrans' sandbox",
    )
    assert [problem for problem in named if problem not in str(refused.value)] == []


@pytest.mark.parametrize(
    ("field", "variable", "development"),
    [
        (
            "shop_gateway_api_key",
            "SHOP_PAYMENT_SHOP_GATEWAY_API_KEY",
            DEVELOPMENT_SHOP_GATEWAY_API_KEY,
        ),
        (
            "midtrans_server_key",
            "SHOP_PAYMENT_MIDTRANS_SERVER_KEY",
            DEVELOPMENT_MIDTRANS_SERVER_KEY,
        ),
    ],
)
@pytest.mark.parametrize(
    ("secret", "problem"),
    [
        ("", "must be set"),
        ("Mid-server-short", "must be at least 32 bytes"),
        (None, "must not be the development value"),
    ],
)
def test_a_weak_key_is_refused_by_name_and_never_shown(
    field: str, variable: str, development: str, secret: str | None, problem: str
) -> None:
    value = development if secret is None else secret
    message = refusal(**{field: SecretStr(value)})

    assert f"{variable} {problem}" in message
    if value:
        assert value not in message


@pytest.mark.parametrize(
    ("secrets", "problem"),
    [
        ([], "SHOP_PAYMENT_WEBHOOK_SECRETS must list at least one secret"),
        ([""], "SHOP_PAYMENT_WEBHOOK_SECRETS[0] must be set"),
        (["whsec_short"], "SHOP_PAYMENT_WEBHOOK_SECRETS[0] must be at least 32 bytes"),
        (
            [WEBHOOK_SECRET, DEVELOPMENT_WEBHOOK_SECRET],
            "SHOP_PAYMENT_WEBHOOK_SECRETS[1] must not be the development value",
        ),
        ([WEBHOOK_SECRET, ""], "SHOP_PAYMENT_WEBHOOK_SECRETS[1] must be set"),
    ],
)
def test_every_webhook_secret_is_checked(secrets: list[str], problem: str) -> None:
    message = refusal(webhook_secrets=[SecretStr(secret) for secret in secrets])

    assert problem in message
    assert all(secret not in message for secret in secrets if secret)


def test_a_sandbox_key_is_refused_in_production() -> None:
    sandbox = "SB-Mid-server-aLongSandboxKeyOfMidtrans"
    message = refusal(midtrans_server_key=SecretStr(sandbox))

    assert "SHOP_PAYMENT_MIDTRANS_SERVER_KEY is a sandbox key" in message
    assert sandbox not in message


@pytest.mark.parametrize(
    ("url", "problem"),
    [
        ("https://api.sandbox.midtrans.com", "SHOP_PAYMENT_MIDTRANS_API_URL is Midtrans' sandbox"),
        ("http://api.midtrans.com", "SHOP_PAYMENT_MIDTRANS_API_URL must be an https:// URL"),
    ],
)
def test_production_calls_midtrans_itself_over_https(url: str, problem: str) -> None:
    assert problem in refusal(midtrans_api_url=url)


def test_sandbox_keys_and_urls_are_fine_in_development() -> None:
    settings = PaymentSettings(environment="development")

    assert settings.midtrans_server_key.get_secret_value().startswith("SB-Mid-")
    assert settings.gateways == ["shop", "midtrans"]


def test_a_gateway_that_is_off_needs_none_of_its_secrets() -> None:
    only_midtrans = PaymentSettings(
        **(
            PRODUCTION
            | {
                "gateways": ["midtrans"],
                "webhook_secrets": [],
                "shop_gateway_api_key": SecretStr(DEVELOPMENT_SHOP_GATEWAY_API_KEY),
            }
        )
    )
    only_shop = PaymentSettings(
        **(
            PRODUCTION
            | {
                "gateways": ["shop"],
                "midtrans_server_key": SecretStr(DEVELOPMENT_MIDTRANS_SERVER_KEY),
                "midtrans_api_url": "https://api.sandbox.midtrans.com",
            }
        )
    )

    assert (only_midtrans.gateways, only_shop.gateways) == (["midtrans"], ["shop"])


def test_at_least_one_gateway_is_on() -> None:
    with pytest.raises(ValidationError, match="gateways"):
        PaymentSettings(environment="development", gateways=[])


def test_the_gateways_are_read_as_a_json_list(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SHOP_PAYMENT_GATEWAYS", '["midtrans"]')

    assert PaymentSettings(environment="test").gateways == ["midtrans"]


def test_secrets_never_show_in_the_settings_repr() -> None:
    settings = PaymentSettings(environment="test", webhook_secrets=[SecretStr("whsec_very-secret")])

    assert "whsec_very-secret" not in repr(settings)


def test_tracing_is_off_by_default_and_set_by_its_variables(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    assert PaymentSettings(environment="test").tracing.exporter == "none"
    monkeypatch.setenv("SHOP_PAYMENT_TRACING__EXPORTER", "file")
    monkeypatch.setenv("SHOP_PAYMENT_TRACING__FILE_DIR", str(tmp_path))
    tracing = PaymentSettings(environment="test").tracing
    assert (tracing.exporter, tracing.file_dir) == ("file", tmp_path)


def test_raw_bodies_are_kept_longer_than_the_reconciliation_looks_back_by_default() -> None:
    settings = PaymentSettings(environment="test")
    assert settings.retention.raw_bodies >= timedelta(seconds=settings.reconcile_lookback_seconds)


def test_raw_bodies_kept_less_than_the_lookback_are_refused_with_the_rule() -> None:
    with pytest.raises(ValidationError) as refused:
        PaymentSettings.model_validate(
            {
                "environment": "test",
                "reconcile_lookback_seconds": 10 * 24 * 3600,
                "retention": {"raw_bodies": "P9D"},
            }
        )
    message = str(refused.value)
    assert "SHOP_PAYMENT_RETENTION__RAW_BODIES must be at least 10 days" in message
    assert "SHOP_PAYMENT_RECONCILE_LOOKBACK_SECONDS" in message


def test_a_shorter_lookback_allows_a_shorter_raw_body_retention(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("SHOP_PAYMENT_RECONCILE_LOOKBACK_SECONDS", str(2 * 24 * 3600))
    monkeypatch.setenv("SHOP_PAYMENT_RETENTION__RAW_BODIES", "P2D")
    assert PaymentSettings(environment="test").retention.raw_bodies == timedelta(days=2)
