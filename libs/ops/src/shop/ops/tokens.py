"""Customer tokens for development, issued by the development identity provider
(:mod:`shop.simulators.identity`) with the key order-service checks them with
(``SHOP_OPS_JWT_SECRET``): in production the real identity provider issues them."""

from __future__ import annotations

from datetime import timedelta

from shop.ops.settings import OpsSettings
from shop.simulators.identity import DEVELOPMENT_SIGNING_KEY, issue_token

__all__ = ["DEVELOPMENT_SIGNING_KEY", "customer_token"]


def customer_token(
    settings: OpsSettings,
    customer_id: str,
    email: str,
    *,
    valid_for: timedelta = timedelta(hours=12),
) -> str:
    """A bearer token naming the customer ``customer_id`` at ``email``."""
    return issue_token(
        settings.jwt_secret.get_secret_value(),
        customer_id,
        email,
        valid_for=valid_for,
        audience=settings.jwt_audience,
        issuer=settings.jwt_issuer,
    )
