"""What both gateways' API clients share: one request, retried a few times while a retry may
pass (no answer, a timeout, a 5xx or a 429), then :class:`GatewayUnavailable`; any other
4xx is the gateway's refusal (:class:`GatewayRefused`). Only requests that are safe to send
again come here: a status read, a refund carrying its idempotency key, and a cancel or
expiry (asked again once done, the gateway refuses it, and the caller reads the status to
tell which)."""

from __future__ import annotations

import asyncio
import email.utils
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any, Final

import httpx

from shop.messaging.breaker import calling_provider, provider_answered
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
    """The gateway's answer (2xx), None for a 404 when ``missing_is_none``; else raise.

    A gateway that says when to come back (``Retry-After``) is not asked again before: the
    error carries it to the worker, whose breaker for the gateway holds its messages that
    long. Any answer of the gateway's own, a refusal included, tells that breaker the
    gateway is there (``provider_answered``)."""
    problem = ""
    too_fast = False  # once the gateway said so, whatever the tries after it got
    answered = False  # by the gateway itself, at the last try
    for attempt in range(len(delays) + 1):
        if attempt:
            await asyncio.sleep(delays[attempt - 1])
        try:
            with calling_provider():
                reply = await client.request(method, path, json=json)
        except httpx.HTTPError as error:  # no answer: connection, timeout, protocol
            problem = f"{type(error).__name__}: {error}"
            answered = False
            continue
        answered = reply.status_code < 500
        if answered:
            provider_answered()  # a 429 too: it is there, and says "not now"
        if reply.status_code in _PASSING:
            problem = f"answered {reply.status_code}"
            too_fast = too_fast or reply.status_code == 429
            retry_after = _retry_after(reply)
            if retry_after is not None:
                raise GatewayUnavailable(
                    f"{gateway} asked to come back in {retry_after:g} s ({method} {path}): "
                    f"{problem}",
                    retry_after=retry_after,
                    too_fast=too_fast,
                    answered=answered,
                )
            continue
        if reply.status_code == 404 and missing_is_none:
            return None
        if reply.is_success:
            return reply
        raise GatewayRefused(f"{gateway} refused {method} {path}: {_said(reply)}")
    raise GatewayUnavailable(
        f"{gateway} could not be asked ({method} {path}): {problem}",
        too_fast=too_fast,
        answered=answered,
    )


def _retry_after(reply: httpx.Response) -> float | None:
    """Seconds the reply's ``Retry-After`` asks to wait (a number, or an HTTP date); None
    when it has none, or none readable."""
    value = reply.headers.get("Retry-After", "").strip()
    if not value:
        return None
    if value.isascii() and value.isdigit():
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        return None
    return max(0.0, (when - datetime.now(UTC)).total_seconds())


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
