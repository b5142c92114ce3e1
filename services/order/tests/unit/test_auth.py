"""Customer tokens are checked for their issuer and audience when the service names them
(production always does), with a little leeway for the issuer's clock."""

from __future__ import annotations

import time
from datetime import timedelta
from typing import Any

import jwt
import pytest
from fastapi import HTTPException
from pydantic import SecretStr

from shop.order.api.auth import ALGORITHM, authenticate
from shop.order.settings import OrderSettings
from shop.simulators.identity import issue_token

KEY = "a-key-of-this-test-long-enough-for-hs256"
ISSUER = "https://id.skincare-shop.example"
AUDIENCE = "skincare-shop"
CHECKING = OrderSettings(
    environment="test",
    jwt_secret=SecretStr(KEY),
    jwt_issuer=ISSUER,
    jwt_audience=AUDIENCE,
    jwt_leeway_seconds=30,
)


def token(**changed: Any) -> str:
    now = int(time.time())
    claims = {
        "sub": "cust_ayu",
        "email": "ayu@example.com",
        "iat": now,
        "exp": now + 300,
        "iss": ISSUER,
        "aud": AUDIENCE,
    } | changed
    return jwt.encode({k: v for k, v in claims.items() if v is not None}, KEY, algorithm=ALGORITHM)


def refusal(settings: OrderSettings, bearer: str) -> str:
    with pytest.raises(HTTPException) as refused:
        authenticate(settings, bearer)
    assert refused.value.status_code == 401
    return str(refused.value.detail)


def test_a_token_of_our_issuer_for_our_audience_names_the_customer() -> None:
    assert authenticate(CHECKING, token()).id == "cust_ayu"


@pytest.mark.parametrize(
    ("changed", "reason"),
    [
        ({"iss": "https://id.someone-else.example"}, "issuer"),
        ({"iss": None}, "iss"),
        ({"aud": "another-service"}, "Audience"),
        ({"aud": None}, "aud"),
    ],
)
def test_a_token_of_another_issuer_or_for_another_audience_is_refused(
    changed: dict[str, Any], reason: str
) -> None:
    assert reason in refusal(CHECKING, token(**changed))


def test_a_token_expired_within_the_leeway_still_passes() -> None:
    assert authenticate(CHECKING, token(exp=int(time.time()) - 10)).id == "cust_ayu"


def test_a_token_expired_beyond_the_leeway_is_refused() -> None:
    assert refusal(CHECKING, token(exp=int(time.time()) - 60)) == "the token has expired"


def test_a_token_from_a_clock_a_little_ahead_passes_and_one_far_ahead_does_not() -> None:
    ahead = int(time.time())
    assert authenticate(CHECKING, token(nbf=ahead + 10)).id == "cust_ayu"
    assert "not yet valid" in refusal(CHECKING, token(nbf=ahead + 120))


def test_no_leeway_means_an_expired_token_is_refused_at_once() -> None:
    strict = CHECKING.model_copy(update={"jwt_leeway_seconds": 0})
    assert refusal(strict, token(exp=int(time.time()) - 2)) == "the token has expired"


@pytest.mark.parametrize("unset", [None, ""])
def test_without_an_issuer_or_audience_set_neither_is_required(unset: str | None) -> None:
    lenient = OrderSettings(
        environment="development", jwt_secret=SecretStr(KEY), jwt_issuer=unset, jwt_audience=unset
    )
    assert authenticate(lenient, token(iss=None, aud=None)).id == "cust_ayu"


def test_the_development_identity_provider_issues_what_production_checks() -> None:
    issued = issue_token(
        KEY,
        "cust_ayu",
        "ayu@example.com",
        valid_for=timedelta(minutes=5),
        audience=AUDIENCE,
        issuer=ISSUER,
    )
    assert authenticate(CHECKING, issued).email == "ayu@example.com"
