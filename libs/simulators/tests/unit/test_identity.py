"""The development identity provider's tokens carry the claims order-service checks."""

from __future__ import annotations

from datetime import timedelta

import jwt
import pytest

from shop.simulators.identity import issue_token

SECRET = "a-key-of-this-test-long-enough-for-hs256"


def test_a_token_names_the_customer_and_expires() -> None:
    token = issue_token(SECRET, "cust_ayu", "ayu@example.com", valid_for=timedelta(minutes=5))

    claims = jwt.decode(token, SECRET, algorithms=["HS256"], options={"require": ["exp", "iat"]})
    assert (claims["sub"], claims["email"]) == ("cust_ayu", "ayu@example.com")
    assert claims["exp"] - claims["iat"] == 300
    assert "aud" not in claims


def test_an_audience_is_claimed_only_when_given() -> None:
    token = issue_token(
        SECRET, "42", "ayu@example.com", valid_for=timedelta(minutes=5), audience="shop-api"
    )

    assert jwt.decode(token, SECRET, algorithms=["HS256"], audience="shop-api")["aud"] == (
        "shop-api"
    )
    with pytest.raises(jwt.InvalidAudienceError):
        jwt.decode(token, SECRET, algorithms=["HS256"], audience="another-api")
