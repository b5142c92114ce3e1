"""The HTTP API on a real database: a request without a valid customer token is a 401
problem document that names what is wrong with the token."""

from __future__ import annotations

from datetime import timedelta

import httpx
import jwt
import pytest

from .api_helpers import Sessions, TokenFor, assert_problem, checkout_body, order_count


async def test_a_missing_token_is_401_naming_the_authorization_header(
    client: httpx.AsyncClient,
) -> None:
    response = await client.post(
        "/v1/orders",
        json=checkout_body(("SERUM-NIA-30", 1)),
        headers={"Idempotency-Key": "no-token"},
    )
    assert_problem(response, 401, "Authorization")
    assert response.headers["www-authenticate"] == "Bearer"


async def test_a_token_of_another_scheme_is_401(client: httpx.AsyncClient) -> None:
    response = await client.get("/v1/orders", headers={"Authorization": "Basic YXl1OnB3"})
    assert_problem(response, 401, "Bearer")


@pytest.mark.parametrize(
    "token",
    [
        pytest.param("not-a-jwt", id="garbage"),
        pytest.param(
            jwt.encode(
                {"sub": "cust_ayu", "email": "ayu@example.com", "exp": 4102444800},
                "a-secret-the-service-does-not-know",
                algorithm="HS256",
            ),
            id="wrong-key",
        ),
        pytest.param(
            jwt.encode({"sub": "cust_ayu", "email": "ayu@example.com"}, None, algorithm="none"),
            id="unsigned",
        ),
    ],
)
async def test_an_invalid_token_is_401_saying_so(client: httpx.AsyncClient, token: str) -> None:
    response = await client.get("/v1/orders", headers={"Authorization": f"Bearer {token}"})
    assert_problem(response, 401, "invalid token")
    assert response.headers["www-authenticate"] == "Bearer"


async def test_a_token_without_a_valid_email_claim_is_401_naming_the_claim(
    client: httpx.AsyncClient, token_for: TokenFor
) -> None:
    token = token_for(email="not-an-address")
    response = await client.get("/v1/orders", headers={"Authorization": f"Bearer {token}"})
    assert_problem(response, 401, "email")


@pytest.mark.parametrize(
    "subject", ["", "cust\x00ayu", "cust\nayu", "c" * 201], ids=["empty", "nul", "newline", "long"]
)
async def test_a_token_whose_sub_names_no_customer_is_401_naming_the_claim(
    client: httpx.AsyncClient, token_for: TokenFor, subject: str
) -> None:
    token = token_for(customer_id=subject)
    response = await client.get("/v1/orders", headers={"Authorization": f"Bearer {token}"})
    assert_problem(response, 401, "sub")


async def test_an_expired_token_is_401_saying_it_expired(
    client: httpx.AsyncClient, token_for: TokenFor, sessions: Sessions
) -> None:
    token = token_for(valid_for=timedelta(minutes=-1))
    response = await client.post(
        "/v1/orders",
        json=checkout_body(("SERUM-NIA-30", 1)),
        headers={"Authorization": f"Bearer {token}", "Idempotency-Key": "expired"},
    )
    assert_problem(response, 401, "expired")
    assert await order_count(sessions) == 0
