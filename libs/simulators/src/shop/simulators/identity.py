"""The shop's identity provider, for development and tests: it issues the customer tokens
order-service checks (a JWT signed with HS256; ``sub`` the customer's id, ``email`` their
address, ``iat`` and ``exp``, and ``iss`` and ``aud`` when the service expects them). In
production the real identity provider issues them and nothing in the shop signs a token."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any, Final

import jwt

ALGORITHM: Final = "HS256"
DEVELOPMENT_SIGNING_KEY: Final = "development-only-secret-do-not-deploy"
"""The key this identity provider signs with in development: order-service's development
``SHOP_ORDER_JWT_SECRET`` checks it (its tests hold the two equal). Anyone may read it here,
so a service refuses it in production."""


def issue_token(
    secret: str,
    customer_id: str,
    email: str,
    *,
    valid_for: timedelta,
    audience: str | None = None,
    issuer: str | None = None,
) -> str:
    """A bearer token naming the customer ``customer_id`` at ``email``, signed with
    ``secret`` (order-service's ``SHOP_ORDER_JWT_SECRET``) and valid for ``valid_for``."""
    now = datetime.now(UTC)
    claims: dict[str, Any] = {
        "sub": customer_id,
        "email": email,
        "iat": now,
        "exp": now + valid_for,
    }
    if audience is not None:
        claims["aud"] = audience
    if issuer is not None:
        claims["iss"] = issuer
    return jwt.encode(claims, secret, algorithm=ALGORITHM)
