from __future__ import annotations

import os
from pathlib import Path

import pytest
from pydantic import SecretStr, ValidationError

from shop.ops.settings import OpsSettings
from shop.simulators.identity import DEVELOPMENT_SIGNING_KEY


def test_defaults_point_at_a_shop_on_this_machine_with_the_identity_providers_key() -> None:
    settings = OpsSettings(environment="test")
    assert settings.order_api_url == "http://127.0.0.1:8001"
    assert settings.messaging.transport == "kafka"
    assert settings.jwt_secret.get_secret_value() == DEVELOPMENT_SIGNING_KEY
    assert settings.operator_token is None
    assert settings.mail_dir is None


def test_no_service_secret_is_held() -> None:
    held = {name for name, field in OpsSettings.model_fields.items() if "Secret" in str(field)}
    assert held == {"jwt_secret", "operator_token"}


def test_variables_are_read_with_the_prefix_and_nested_with_double_underscores(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("SHOP_OPS_ORDER_API_URL", "http://127.0.0.1:18001")
    monkeypatch.setenv("SHOP_OPS_MESSAGING__TRANSPORT", "sqs")
    monkeypatch.setenv("SHOP_OPS_MESSAGING__NAMESPACE", "demo")
    monkeypatch.setenv("SHOP_OPS_MESSAGING__SQS__ENDPOINT_URL", "http://127.0.0.1:4566")
    settings = OpsSettings(environment="test")
    assert settings.order_api_url == "http://127.0.0.1:18001"
    assert settings.messaging.transport == "sqs"
    assert settings.messaging.namespace == "demo"
    assert settings.messaging.sqs.endpoint_url == "http://127.0.0.1:4566"


def test_the_env_file_named_by_its_variable_is_read_and_variables_win_over_it(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    env_file = tmp_path / "shop.env"
    env_file.write_text(
        "SHOP_OPS_ORDER_API_URL=http://127.0.0.1:18001\n"
        "SHOP_OPS_PAYMENT_API_URL=http://127.0.0.1:18002\n"
        "SHOP_OPS_MESSAGING__KAFKA__BOOTSTRAP_SERVERS=127.0.0.1:19092\n"
        f"SHOP_OPS_MAIL_DIR={tmp_path / 'mail'}\n"
        "SOMETHING_ELSE=ignored\n"
    )
    monkeypatch.setenv("SHOP_OPS_ENV_FILE", str(env_file))
    monkeypatch.setenv("SHOP_OPS_PAYMENT_API_URL", "http://127.0.0.1:28002")
    settings = OpsSettings(environment="test")
    assert settings.order_api_url == "http://127.0.0.1:18001"
    assert settings.payment_api_url == "http://127.0.0.1:28002"
    assert settings.messaging.kafka.bootstrap_servers == "127.0.0.1:19092"
    assert settings.mail_dir == tmp_path / "mail"


def test_an_env_file_given_to_the_settings_is_read_without_touching_the_environment(
    tmp_path: Path,
) -> None:
    # A program reading two shops' settings side by side (threads) names each file: patching
    # os.environ for one would race every thread iterating it (an HTTP client's proxy lookup).
    env_file = tmp_path / "shop.env"
    env_file.write_text("SHOP_OPS_ORDER_API_URL=http://127.0.0.1:18001\n")
    before = dict(os.environ)
    settings = OpsSettings(_env_file=env_file, environment="test")
    assert settings.order_api_url == "http://127.0.0.1:18001"
    assert dict(os.environ) == before


def test_each_service_is_read_through_its_worker_and_no_database_is_configured() -> None:
    settings = OpsSettings(environment="test", notification_worker_url="http://127.0.0.1:19103")
    assert settings.worker_url("notification-service") == "http://127.0.0.1:19103"
    with pytest.raises(KeyError, match="stock-service"):
        settings.worker_url("stock-service")
    assert not [name for name in OpsSettings.model_fields if "database" in name]


def test_a_transport_the_library_does_not_know_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SHOP_OPS_MESSAGING__TRANSPORT", "carrier-pigeon")
    with pytest.raises(ValidationError):
        OpsSettings(environment="test")


def test_a_broker_address_alone_keeps_the_bus_on_kafka(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SHOP_OPS_MESSAGING__KAFKA__BOOTSTRAP_SERVERS", "127.0.0.1:19092")
    settings = OpsSettings(environment="test")
    assert settings.messaging.transport == "kafka"
    assert settings.messaging.kafka.bootstrap_servers == "127.0.0.1:19092"


def test_without_an_environment_the_settings_name_the_variable(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("SHOP_OPS_ENVIRONMENT", raising=False)
    monkeypatch.setenv("SHOP_OPS_ENV_FILE", os.devnull)
    with pytest.raises(ValidationError, match="SHOP_OPS_ENVIRONMENT must be set"):
        OpsSettings()


def test_the_env_file_make_run_writes_says_where_the_tools_run(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv("SHOP_OPS_ENVIRONMENT", raising=False)
    env_file = tmp_path / "shop.env"
    env_file.write_text("SHOP_OPS_ENVIRONMENT=development\n")
    monkeypatch.setenv("SHOP_OPS_ENV_FILE", str(env_file))
    assert OpsSettings().environment == "development"


def test_production_needs_none_of_the_development_tools_secrets() -> None:
    # The console runs so: it signs no token and no notification (its bus login aside).
    secured = {
        "transport": "kafka",
        "kafka": {
            "security_protocol": "SASL_SSL",
            "sasl_username": "console",
            "sasl_password": "s" * 32,
        },
    }
    settings = OpsSettings(environment="production", messaging=secured)  # type: ignore[arg-type]
    assert settings.environment == "production"


@pytest.mark.parametrize(
    ("field", "variable"),
    [
        ("jwt_secret", "SHOP_OPS_JWT_SECRET"),
        ("operator_token", "SHOP_OPS_OPERATOR_TOKEN"),
    ],
)
@pytest.mark.parametrize(
    ("secret", "problem"),
    [("", "must be set"), ("too-short", "must be at least 32 bytes")],
)
def test_production_refuses_a_weak_secret_it_is_given_by_name(
    field: str, variable: str, secret: str, problem: str
) -> None:
    with pytest.raises(ValidationError) as refused:
        OpsSettings(environment="production", **{field: SecretStr(secret)})

    assert f"{variable} {problem}" in str(refused.value)
    if secret:
        assert secret not in str(refused.value)


def test_production_refuses_a_development_secret_given_on_purpose() -> None:
    with pytest.raises(ValidationError, match="SHOP_OPS_JWT_SECRET must not be the development"):
        OpsSettings(environment="production", jwt_secret=SecretStr(DEVELOPMENT_SIGNING_KEY))


def test_an_empty_tracing_url_means_no_tracing_backend(monkeypatch: pytest.MonkeyPatch) -> None:
    # compose passes SHOP_OPS_TRACING_URL as "" when .env leaves SHOP_TRACING_URL unset.
    monkeypatch.setenv("SHOP_OPS_TRACING_URL", "")
    assert OpsSettings(environment="test").tracing_url is None
    monkeypatch.setenv("SHOP_OPS_TRACING_URL", "http://jaeger-query:16686")
    assert OpsSettings(environment="test").tracing_url == "http://jaeger-query:16686"


def test_production_refuses_a_kafka_bus_without_tls_or_login() -> None:
    with pytest.raises(ValidationError, match="SHOP_OPS_MESSAGING__KAFKA__SECURITY_PROTOCOL"):
        OpsSettings(environment="production", messaging={"transport": "kafka"})  # type: ignore[arg-type]
