"""Development defaults and weak secrets are refused at start-up in production, each named
by its variable and never shown; no console starts without saying where it runs."""

from __future__ import annotations

import pytest
from pydantic import SecretStr, ValidationError

from shop.console.domain.passwords import hash_password
from shop.console.settings import (
    DEVELOPMENT_ADMIN_PASSWORD,
    DEVELOPMENT_SESSION_SECRET,
    EARLIER_DEVELOPMENT_ADMIN_PASSWORD_HASH,
    ConsoleSettings,
)

from .fakes import CHEAP


def test_without_an_environment_the_settings_name_the_variable(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("SHOP_CONSOLE_ENVIRONMENT", raising=False)
    with pytest.raises(ValidationError, match="SHOP_CONSOLE_ENVIRONMENT must be set"):
        ConsoleSettings()


def test_production_with_every_development_default_names_each_one() -> None:
    with pytest.raises(ValidationError) as refused:
        ConsoleSettings(environment="production")

    named = (
        "SHOP_CONSOLE_ADMIN_PASSWORD_HASH must not be the development value",
        "SHOP_CONSOLE_SESSION_SECRET must not be the development value",
        "SHOP_CONSOLE_SECURE_COOKIE must be true in production",
    )
    assert [problem for problem in named if problem not in str(refused.value)] == []


def test_production_with_its_own_hash_secret_and_secure_cookie_starts() -> None:
    settings = ConsoleSettings(
        environment="production",
        admin_password_hash=SecretStr(str(hash_password("s3cret-of-production", cost=CHEAP))),
        session_secret=SecretStr("x" * 40),
        secure_cookie=True,
    )

    assert settings.password_hash.matches("s3cret-of-production")
    assert not settings.shows_captured_mail


@pytest.mark.parametrize(
    ("secret", "problem"),
    [
        ("", "SHOP_CONSOLE_SESSION_SECRET must be set"),
        ("x" * 31, "SHOP_CONSOLE_SESSION_SECRET must be at least 32 bytes"),
        (DEVELOPMENT_SESSION_SECRET, "SHOP_CONSOLE_SESSION_SECRET must not be the development"),
    ],
)
def test_production_refuses_a_weak_session_secret_by_name(secret: str, problem: str) -> None:
    with pytest.raises(ValidationError) as refused:
        ConsoleSettings(
            environment="production",
            admin_password_hash=SecretStr(str(hash_password("p", cost=CHEAP))),
            session_secret=SecretStr(secret),
            secure_cookie=True,
        )

    assert problem in str(refused.value)
    if secret:
        assert secret not in str(refused.value)


def test_production_refuses_the_earlier_development_hash_too() -> None:
    with pytest.raises(ValidationError) as refused:
        ConsoleSettings(
            environment="production",
            admin_password_hash=SecretStr(EARLIER_DEVELOPMENT_ADMIN_PASSWORD_HASH),
            session_secret=SecretStr("x" * 40),
            secure_cookie=True,
        )

    assert "SHOP_CONSOLE_ADMIN_PASSWORD_HASH must not be the development value" in str(
        refused.value
    )


def test_a_hash_that_cannot_be_read_is_refused_at_start_up() -> None:
    with pytest.raises(ValidationError, match="argon2id"):
        ConsoleSettings(
            environment="development", admin_password_hash=SecretStr("plain-text-password")
        )


def test_development_lets_the_developer_in_with_the_documented_password() -> None:
    settings = ConsoleSettings(environment="development")

    assert settings.port == 8003
    assert settings.password_hash.matches(DEVELOPMENT_ADMIN_PASSWORD)
    assert settings.shows_captured_mail
