"""Customers authenticate with a bearer JWT (HS256): ``sub`` is the customer id, ``email``
their address, ``exp`` required."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import jwt
from fastapi import HTTPException
from pydantic import TypeAdapter, ValidationError

from shop.contracts.base import EmailAddress
from shop.order.domain.customer import Customer
from shop.order.settings import OrderSettings

ALGORITHM = "HS256"
_email = TypeAdapter(EmailAddress)  # checked once per address, then remembered


def issue_token(
    settings: OrderSettings, customer_id: str, email: str, *, valid_for: timedelta
) -> str:
    """A token as the shop's identity provider would issue it (development and tests)."""
    now = datetime.now(UTC)
    claims = {"sub": customer_id, "email": email, "iat": now, "exp": now + valid_for}
    if settings.jwt_audience:
        claims["aud"] = settings.jwt_audience
    return jwt.encode(claims, settings.jwt_secret.get_secret_value(), algorithm=ALGORITHM)


def _unauthorized(detail: str) -> HTTPException:
    return HTTPException(status_code=401, detail=detail)


def authenticate(settings: OrderSettings, token: str) -> Customer:
    """The customer ``token`` names, or a 401 saying what is wrong with it."""
    try:
        claims = jwt.decode(
            token,
            settings.jwt_secret.get_secret_value(),
            algorithms=[ALGORITHM],
            audience=settings.jwt_audience,
            options={"require": ["sub", "exp"]},
        )
    except jwt.ExpiredSignatureError as error:
        raise _unauthorized("the token has expired") from error
    except jwt.InvalidTokenError as error:
        raise _unauthorized(f"invalid token: {error}") from error
    subject, email = claims.get("sub"), claims.get("email")
    if not isinstance(subject, str) or not subject.isprintable() or not 0 < len(subject) <= 200:
        raise _unauthorized("the token's sub claim must name the customer")
    try:
        address = _email.validate_python(email)
    except ValidationError as error:
        raise _unauthorized("the token's email claim must be an email address") from error
    return Customer(id=subject, email=address)
