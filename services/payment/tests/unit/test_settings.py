"""Development secrets and defaults are refused at start-up in production, all named."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import SecretStr, ValidationError

from shop.messaging import MessagingSettings
from shop.payment.settings import DEVELOPMENT_WEBHOOK_SECRET, PaymentSettings


def test_production_with_the_development_defaults_names_each_one() -> None:
    with pytest.raises(ValidationError) as refused:
        PaymentSettings(environment="production")

    named = (
        "SHOP_PAYMENT_MESSAGING__TRANSPORT is memory",
        "SHOP_PAYMENT_MESSAGING__NAMESPACE is empty",
        "SHOP_PAYMENT_WEBHOOK_SECRETS must not list the development secret",
        "SHOP_PAYMENT_MIDTRANS_SERVER_KEY must be set outside development",
    )
    assert [problem for problem in named if problem not in str(refused.value)] == []


def test_a_development_secret_left_beside_a_real_one_is_refused_too() -> None:
    with pytest.raises(ValidationError, match="WEBHOOK_SECRETS must not list"):
        PaymentSettings(
            environment="production",
            webhook_secrets=[SecretStr("whsec_" + "r" * 32), SecretStr(DEVELOPMENT_WEBHOOK_SECRET)],
            midtrans_server_key=SecretStr("Mid-server-" + "k" * 20),
            messaging=MessagingSettings(transport="kafka", namespace="prod"),
        )


def test_secrets_never_show_in_the_settings_repr() -> None:
    settings = PaymentSettings(webhook_secrets=[SecretStr("whsec_very-secret")])

    assert "whsec_very-secret" not in repr(settings)


def test_tracing_is_off_by_default_and_set_by_its_variables(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    assert PaymentSettings().tracing.exporter == "none"
    monkeypatch.setenv("SHOP_PAYMENT_TRACING__EXPORTER", "file")
    monkeypatch.setenv("SHOP_PAYMENT_TRACING__FILE_DIR", str(tmp_path))
    tracing = PaymentSettings().tracing
    assert (tracing.exporter, tracing.file_dir) == ("file", tmp_path)
