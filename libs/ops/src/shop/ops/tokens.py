"""Customer tokens for development, issued by order-service's own function with the key
it checks them with (``SHOP_OPS_JWT_SECRET``): in production the identity provider issues
them."""

from __future__ import annotations

from datetime import timedelta

from shop.ops.settings import OpsSettings
from shop.order.api.auth import issue_token
from shop.order.settings import OrderSettings


def customer_token(
    settings: OpsSettings,
    customer_id: str,
    email: str,
    *,
    valid_for: timedelta = timedelta(hours=12),
) -> str:
    """A bearer token naming the customer ``customer_id`` at ``email``."""
    # Only the signing key matters here; the rest of order-service's settings (and its
    # environment) stay out of it.
    signing = OrderSettings.model_construct(jwt_secret=settings.jwt_secret, jwt_audience=None)
    return issue_token(signing, customer_id, email, valid_for=valid_for)
