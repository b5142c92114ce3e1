"""What both gateways' API clients share: one request, retried a few times while a retry may
pass (no answer, a timeout, a 5xx or a 429), then :class:`GatewayUnavailable`; any other
4xx is the gateway's refusal (:class:`GatewayRefused`). Only requests that are safe to send
again come here: a status read, a refund carrying its idempotency key, and a cancel or
expiry (asked again once done, the gateway refuses it, and the caller reads the status to
tell which)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any, Final

import httpx

from shop.payment.domain.errors import GatewayRefused, GatewayUnavailable

RETRY_DELAYS: Final[Sequence[float]] = (0.2, 1.0)
"""Pauses between tries of one call: short, since the worker's own retries (with backoff,
for minutes) come after these."""
_PASSING: Final = frozenset({408, 425, 429, 500, 502, 503, 504})


async def request(
    client: httpx.AsyncClient,
    gateway: str,
    method: str,
    path: str,
    *,
    json: Any = None,
    missing_is_none: bool = False,
    delays: Sequence[float] = RETRY_DELAYS,
) -> httpx.Response | None:
    """The gateway's answer (2xx), None for a 404 when ``missing_is_none``; else raise."""
    problem = ""
    for attempt in range(len(delays) + 1):
        if attempt:
            await asyncio.sleep(delays[attempt - 1])
        try:
            reply = await client.request(method, path, json=json)
        except httpx.HTTPError as error:  # no answer: connection, timeout, protocol
            problem = f"{type(error).__name__}: {error}"
            continue
        if reply.status_code in _PASSING:
            problem = f"answered {reply.status_code}"
            continue
        if reply.status_code == 404 and missing_is_none:
            return None
        if reply.is_success:
            return reply
        raise GatewayRefused(f"{gateway} refused {method} {path}: {_said(reply)}")
    raise GatewayUnavailable(f"{gateway} could not be asked ({method} {path}): {problem}")


def _said(reply: httpx.Response) -> str:
    try:
        body = reply.json()
    except ValueError:
        return f"{reply.status_code} {reply.text[:200]}"
    message = body.get("status_message") or body.get("detail") if isinstance(body, dict) else None
    return f"{reply.status_code} {message or reply.text[:200]}"


def document(reply: httpx.Response, gateway: str) -> dict[str, Any]:
    """The answer's JSON object. A gateway that answers what is not one is misbehaving, not
    refusing: asked again later."""
    try:
        body = reply.json()
    except ValueError:
        raise GatewayUnavailable(f"{gateway} answered something that is not JSON") from None
    if not isinstance(body, dict):
        raise GatewayUnavailable(f"{gateway} answered JSON that is not an object")
    return body
