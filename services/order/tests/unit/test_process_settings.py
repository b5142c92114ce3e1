"""In production each process is judged on the parts of the settings it uses, and only
those: the API on the customers' tokens, the worker on the bus and the operator's token,
the migration and the seed on nothing but the database; a process that does not say which
it is, on all of them."""

from __future__ import annotations

from typing import Any, get_args

import pytest
from pydantic import SecretStr, ValidationError

from shop.messaging import KafkaSettings, MessagingSettings
from shop.messaging.internal import DEVELOPMENT_OPERATOR_TOKEN
from shop.order.settings import DEVELOPMENT_JWT_SECRET, USES, OrderProcess, OrderSettings

BUS = MessagingSettings(
    transport="kafka",
    namespace="prod",
    kafka=KafkaSettings(
        security_protocol="SASL_SSL",
        sasl_username="order-service",
        sasl_password=SecretStr("r3al-scram-password-of-production-0123"),
    ),
)
CUSTOMER_TOKENS: dict[str, Any] = {
    "jwt_secret": SecretStr("r3al-jwt-key-of-production-0123456789"),
    "jwt_issuer": "https://id.skincare-shop.example",
    "jwt_audience": "skincare-shop",
}
OPERATOR_TOKEN = SecretStr("r3al-operator-token-of-production-0123")


def refusal(**settings: Any) -> str:
    with pytest.raises(ValidationError) as refused:
        OrderSettings(environment="production", **settings)
    return str(refused.value)


def test_the_api_starts_without_the_operator_token_or_the_bus() -> None:
    settings = OrderSettings(environment="production", process="api", **CUSTOMER_TOKENS)

    assert settings.operator_token is None
    assert settings.messaging.transport == "memory"


@pytest.mark.parametrize(
    ("changed", "problem"),
    [
        (
            {"jwt_secret": SecretStr(DEVELOPMENT_JWT_SECRET)},
            "JWT_SECRET must not be the development",
        ),
        ({"jwt_issuer": None}, "SHOP_ORDER_JWT_ISSUER must be set in production"),
        ({"jwt_audience": None}, "SHOP_ORDER_JWT_AUDIENCE must be set in production"),
    ],
)
def test_the_api_is_still_refused_on_the_customers_tokens(
    changed: dict[str, Any], problem: str
) -> None:
    assert problem in refusal(process="api", **(CUSTOMER_TOKENS | changed))


def test_the_worker_starts_without_the_customers_tokens() -> None:
    settings = OrderSettings(
        environment="production", process="worker", messaging=BUS, operator_token=OPERATOR_TOKEN
    )

    assert settings.jwt_secret.get_secret_value() == DEVELOPMENT_JWT_SECRET


def test_the_worker_is_still_refused_without_its_operator_token() -> None:
    assert "SHOP_ORDER_OPERATOR_TOKEN must be set" in refusal(process="worker", messaging=BUS)
    problem = refusal(
        process="worker", messaging=BUS, operator_token=SecretStr(DEVELOPMENT_OPERATOR_TOKEN)
    )
    assert "SHOP_ORDER_OPERATOR_TOKEN must not be the development value" in problem


def test_the_worker_is_still_refused_on_a_plaintext_bus() -> None:
    plaintext = MessagingSettings(transport="kafka", namespace="prod")

    problem = refusal(process="worker", messaging=plaintext, operator_token=OPERATOR_TOKEN)

    assert "SHOP_ORDER_MESSAGING__KAFKA__SECURITY_PROTOCOL is PLAINTEXT" in problem


@pytest.mark.parametrize("process", ["migrate", "seed"])
def test_the_migration_and_the_seed_start_with_every_development_default(
    process: OrderProcess,
) -> None:
    assert OrderSettings(environment="production", process=process).process == process


def test_a_process_that_does_not_say_which_it_is_is_judged_on_every_part() -> None:
    problem = refusal()

    assert "SHOP_ORDER_MESSAGING__TRANSPORT is memory" in problem
    assert "SHOP_ORDER_OPERATOR_TOKEN must be set" in problem
    assert "SHOP_ORDER_JWT_SECRET must not be the development value" in problem


def test_the_entry_point_s_word_wins_over_a_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SHOP_ORDER_PROCESS", "migrate")

    assert "SHOP_ORDER_OPERATOR_TOKEN must be set" in refusal(process="worker", messaging=BUS)


def test_the_table_says_what_every_process_uses() -> None:
    assert set(USES) == set(get_args(OrderProcess))
