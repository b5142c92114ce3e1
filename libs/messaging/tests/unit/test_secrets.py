"""The one rule every deployed secret of the shop follows, and the environment every
process must name."""

from __future__ import annotations

import pytest
from pydantic import SecretStr

from shop.messaging.settings import require_environment, unfit_secret

DEVELOPMENT = "development-only-do-not-deploy"


@pytest.mark.parametrize(
    ("secret", "problem"),
    [
        (None, "SHOP_X_KEY must be set"),
        ("", "SHOP_X_KEY must be set"),
        (SecretStr(""), "SHOP_X_KEY must be set"),
        ("k" * 31, "SHOP_X_KEY must be at least 32 bytes"),
        (DEVELOPMENT, "SHOP_X_KEY must not be the development value"),
        (SecretStr(DEVELOPMENT), "SHOP_X_KEY must not be the development value"),
    ],
)
def test_a_weak_secret_is_named_by_its_variable(
    secret: SecretStr | str | None, problem: str
) -> None:
    assert unfit_secret("SHOP_X_KEY", secret, {DEVELOPMENT}) == problem


def test_a_long_random_secret_is_fit() -> None:
    assert unfit_secret("SHOP_X_KEY", SecretStr("k" * 32), {DEVELOPMENT}) is None
    assert unfit_secret("SHOP_X_KEY", "é" * 16) is None  # 32 bytes in UTF-8


@pytest.mark.parametrize("data", [{}, {"environment": ""}, {"environment": None}])
def test_settings_without_an_environment_name_the_variable(data: dict[str, object]) -> None:
    with pytest.raises(ValueError, match="SHOP_X_ENVIRONMENT must be set"):
        require_environment(data, "SHOP_X_ENVIRONMENT")


def test_settings_with_an_environment_pass_through() -> None:
    assert require_environment({"environment": "test"}, "SHOP_X_ENVIRONMENT") == {
        "environment": "test"
    }
