"""Customers authenticate with a bearer JWT (HS256) that the shop's identity provider
issues: ``sub`` is the customer id, ``email`` their address, ``exp`` required; ``iss`` and
``aud`` required and checked when ``SHOP_ORDER_JWT_ISSUER`` and ``SHOP_ORDER_JWT_AUDIENCE``
are set (production sets both), so that a token the same key signed for another service or
by another issuer is refused. ``exp``, ``iat`` and ``nbf`` allow the issuer's clock to be
``SHOP_ORDER_JWT_LEEWAY_SECONDS`` off ours. This service only checks tokens; it issues none."""

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


def _required_claims(settings: OrderSettings) -> list[str]:
    required = ["sub", "exp"]
    if settings.jwt_issuer:
        required.append("iss")
    if settings.jwt_audience:
        required.append("aud")
    return required


def authenticate(settings: OrderSettings, token: str) -> Customer:
    """The customer ``token`` names, or a 401 saying what is wrong with it."""
    try:
        claims = jwt.decode(
            token,
            settings.jwt_secret.get_secret_value(),
            algorithms=[ALGORITHM],
            # An empty setting (a variable set to nothing) checks nothing, as an unset one.
            audience=settings.jwt_audience or None,
            issuer=settings.jwt_issuer or None,
            leeway=settings.jwt_leeway_seconds,
            options={"require": _required_claims(settings)},
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
