"""In production each process is judged on the parts of the settings it uses, and only
those: the API on the gateways' notification keys, the worker on the bus, the operator's
token and the keys it calls the gateways' APIs with, the migration on nothing but the
database; a process that does not say which it is, on all of them."""

from __future__ import annotations

from typing import Any, get_args

import pytest
from pydantic import SecretStr, ValidationError

from shop.messaging import KafkaSettings, MessagingSettings
from shop.payment.settings import (
    DEVELOPMENT_MIDTRANS_SERVER_KEY,
    DEVELOPMENT_SHOP_GATEWAY_API_KEY,
    DEVELOPMENT_WEBHOOK_SECRET,
    USES,
    PaymentProcess,
    PaymentSettings,
)

GATEWAYS: dict[str, Any] = {"gateways": ["shop", "midtrans"]}
MIDTRANS_KEY: dict[str, Any] = {
    "midtrans_server_key": SecretStr("Mid-server-r3alKeyOfProduction0123"),
}
WEBHOOKS: dict[str, Any] = (
    GATEWAYS
    | MIDTRANS_KEY
    | {
        "webhook_secrets": [SecretStr("whsec_r3al-secret-of-production-0123456789")],
    }
)
WORKER: dict[str, Any] = (
    GATEWAYS
    | MIDTRANS_KEY
    | {
        "shop_gateway_api_key": SecretStr("gwkey_r3al-key-of-production-0123456789"),
        "midtrans_api_url": "https://api.midtrans.com",
        "operator_token": SecretStr("r3al-operator-token-of-production-0123"),
        "messaging": MessagingSettings(
            transport="kafka",
            namespace="prod",
            kafka=KafkaSettings(
                security_protocol="SASL_SSL",
                sasl_username="payment-service",
                sasl_password=SecretStr("r3al-scram-password-of-production-0123"),
            ),
        ),
    }
)


def refusal(**settings: Any) -> str:
    with pytest.raises(ValidationError) as refused:
        PaymentSettings(environment="production", **settings)
    return str(refused.value)


def test_the_api_starts_without_the_operator_token_the_bus_or_the_gateways_api_keys() -> None:
    settings = PaymentSettings(environment="production", process="api", **WEBHOOKS)

    assert settings.operator_token is None
    assert settings.messaging.transport == "memory"
    assert settings.shop_gateway_api_key.get_secret_value() == DEVELOPMENT_SHOP_GATEWAY_API_KEY


@pytest.mark.parametrize(
    ("changed", "problem"),
    [
        (
            {"webhook_secrets": [SecretStr(DEVELOPMENT_WEBHOOK_SECRET)]},
            "SHOP_PAYMENT_WEBHOOK_SECRETS[0] must not be the development value",
        ),
        (
            {"midtrans_server_key": SecretStr(DEVELOPMENT_MIDTRANS_SERVER_KEY)},
            "SHOP_PAYMENT_MIDTRANS_SERVER_KEY must not be the development value",
        ),
        (
            {"midtrans_server_key": SecretStr("SB-Mid-server-sandboxKeyOfSomeone0123")},
            "SHOP_PAYMENT_MIDTRANS_SERVER_KEY is a sandbox key",
        ),
    ],
)
def test_the_api_is_still_refused_on_the_keys_it_checks_notifications_with(
    changed: dict[str, Any], problem: str
) -> None:
    assert problem in refusal(process="api", **(WEBHOOKS | changed))


def test_the_api_is_still_refused_without_its_gateways_named() -> None:
    webhooks = {name: value for name, value in WEBHOOKS.items() if name != "gateways"}

    assert "SHOP_PAYMENT_GATEWAYS must be set in production" in refusal(process="api", **webhooks)


def test_the_worker_starts_without_the_webhook_secrets() -> None:
    settings = PaymentSettings(environment="production", process="worker", **WORKER)

    assert [s.get_secret_value() for s in settings.webhook_secrets] == [DEVELOPMENT_WEBHOOK_SECRET]


@pytest.mark.parametrize(
    ("changed", "problem"),
    [
        ({"operator_token": None}, "SHOP_PAYMENT_OPERATOR_TOKEN must be set"),
        (
            {"shop_gateway_api_key": SecretStr(DEVELOPMENT_SHOP_GATEWAY_API_KEY)},
            "SHOP_PAYMENT_SHOP_GATEWAY_API_KEY must not be the development value",
        ),
        (
            {"midtrans_server_key": SecretStr(DEVELOPMENT_MIDTRANS_SERVER_KEY)},
            "SHOP_PAYMENT_MIDTRANS_SERVER_KEY must not be the development value",
        ),
        (
            {"midtrans_api_url": "https://api.sandbox.midtrans.com"},
            "SHOP_PAYMENT_MIDTRANS_API_URL is Midtrans' sandbox",
        ),
        (
            {"messaging": MessagingSettings(transport="kafka", namespace="prod")},
            "SHOP_PAYMENT_MESSAGING__KAFKA__SECURITY_PROTOCOL is PLAINTEXT",
        ),
    ],
)
def test_the_worker_is_still_refused_on_what_it_uses(changed: dict[str, Any], problem: str) -> None:
    assert problem in refusal(process="worker", **(WORKER | changed))


def test_the_migration_starts_with_every_development_default() -> None:
    assert PaymentSettings(environment="production", process="migrate").process == "migrate"


def test_a_process_that_does_not_say_which_it_is_is_judged_on_every_part() -> None:
    problem = refusal(**GATEWAYS)

    assert "SHOP_PAYMENT_MESSAGING__TRANSPORT is memory" in problem
    assert "SHOP_PAYMENT_OPERATOR_TOKEN must be set" in problem
    assert "SHOP_PAYMENT_WEBHOOK_SECRETS[0] must not be the development value" in problem
    assert "SHOP_PAYMENT_SHOP_GATEWAY_API_KEY must not be the development value" in problem


def test_a_key_both_parts_judge_is_named_once() -> None:
    problem = refusal(**(WORKER | WEBHOOKS | {"midtrans_server_key": SecretStr("short")}))

    assert problem.count("SHOP_PAYMENT_MIDTRANS_SERVER_KEY must be at least 32 bytes") == 1


def test_the_entry_point_s_word_wins_over_a_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SHOP_PAYMENT_PROCESS", "migrate")

    assert "SHOP_PAYMENT_OPERATOR_TOKEN must be set" in refusal(
        process="worker", **(WORKER | {"operator_token": None})
    )


def test_the_table_says_what_every_process_uses() -> None:
    assert set(USES) == set(get_args(PaymentProcess))
