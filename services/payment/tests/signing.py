"""Notifications signed as each gateway signs them, for tests: by the development payment
gateway (:mod:`shop.simulators.gateway`), which signs from each format's definition and not
with this service's code, so that a verifier that drifts from the definition fails here."""

from __future__ import annotations

import json
import time
from typing import Any

from shop.simulators import gateway

SECRET = "whsec_test-secret-of-the-payment-tests"
OLD_SECRET = "whsec_the-secret-being-rotated-out"
SERVER_KEY = "SB-Mid-server-test-key"
GATEWAY_API_KEY = "gwkey_test-key-of-the-payment-tests"


def sign_shop(body: bytes, *, secret: str = SECRET, at: float | None = None) -> str:
    """The ``Payment-Signature`` a gateway of the shop's format sends with ``body``."""
    return gateway.shop_signature(body, secret, int(time.time() if at is None else at))


def shop_request(
    payload: dict[str, Any], *, secret: str = SECRET, at: float | None = None
) -> dict[str, Any]:
    """What a gateway sends in the shop's format: the body and its signature header."""
    body = json.dumps(payload).encode()
    return {
        "content": body,
        "headers": {
            gateway.SHOP_SIGNATURE_HEADER: sign_shop(body, secret=secret, at=at),
            "Content-Type": "application/json",
        },
    }


def midtrans_request(payload: dict[str, Any], *, server_key: str = SERVER_KEY) -> dict[str, Any]:
    """What Midtrans sends: its notification with the signature_key it computes."""
    signed = {
        **payload,
        "signature_key": gateway.midtrans_signature_key(
            payload["order_id"], payload["status_code"], payload["gross_amount"], server_key
        ),
    }
    return {"content": json.dumps(signed).encode(), "headers": {"Content-Type": "application/json"}}
