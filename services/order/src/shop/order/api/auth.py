"""Customers authenticate with a bearer JWT (HS256) that the shop's identity provider
issues: ``sub`` is the customer id, ``email`` their address, ``exp`` required, ``aud`` when
``SHOP_ORDER_JWT_AUDIENCE`` is set. This service only checks tokens; it issues none."""

from __future__ import annotations

import jwt
from fastapi import HTTPException
from pydantic import TypeAdapter, ValidationError

from shop.contracts.base import EmailAddress
from shop.order.domain.customer import Customer
from shop.order.settings import OrderSettings

ALGORITHM = "HS256"
_email = TypeAdapter(EmailAddress)  # checked once per address, then remembered


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
