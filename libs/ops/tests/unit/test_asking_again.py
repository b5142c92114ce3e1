"""What ops does when a service says to ask again (a 503 with ``Retry-After``: its database
away or too slow for a moment): a read is asked again, a few times, as the answer says; a
checkout is sent again with the same Idempotency-Key, after that or after a connection
dropped under it (a keep-alive connection the server had just closed), and places one order."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from datetime import UTC, datetime

import httpx
import pytest

from shop.ops.errors import OpsError
from shop.ops.frontend import CartLine, place_order
from shop.ops.internal import OperatorPort
from shop.ops.settings import OpsSettings

BUSY = httpx.Response(503, headers={"Retry-After": "0"}, json={"detail": "ask again shortly"})


def answering(
    *replies: httpx.Response | Exception,
) -> tuple[httpx.MockTransport, list[httpx.Request]]:
    """A server that answers ``replies`` in turn (an exception: the connection failing)."""
    asked: list[httpx.Request] = []
    waiting = list(replies)

    def answer(request: httpx.Request) -> httpx.Response:
        asked.append(request)
        reply = waiting.pop(0)
        if isinstance(reply, Exception):
            raise reply
        return reply

    return httpx.MockTransport(answer), asked


def port(transport: httpx.MockTransport) -> OperatorPort:
    client = httpx.AsyncClient(transport=transport, base_url="http://w")
    return OperatorPort(client, "payment-service", "http://w")


async def test_a_read_answered_busy_is_asked_again() -> None:
    transport, asked = answering(BUSY, BUSY, httpx.Response(200, json={"payments": []}))
    assert await port(transport).get("/internal/v1/payments") == {"payments": []}
    assert len(asked) == 3


async def test_a_read_still_busy_after_a_few_tries_is_the_error_it_is() -> None:
    transport, asked = answering(*[BUSY] * 10)
    with pytest.raises(OpsError, match="answered 503"):
        await port(transport).get("/internal/v1/payments")
    assert len(asked) < 10


async def test_a_change_answered_busy_is_not_sent_again_by_itself() -> None:
    transport, asked = answering(BUSY, httpx.Response(200, json={"purged": []}))
    with pytest.raises(OpsError, match="answered 503"):
        await port(transport).post("/internal/v1/dead-letters/g/1/purge")
    assert len(asked) == 1


def placed() -> httpx.Response:
    return httpx.Response(
        201,
        json={
            "id": str(uuid.uuid4()),
            "number": "SK-7KQ4-M2XD",
            "status": "pending",
            "total": 89000,
            "currency": "IDR",
            "created_at": datetime.now(UTC).isoformat(),
        },
    )


@pytest.mark.parametrize(
    "first",
    [lambda: BUSY, lambda: httpx.ReadError("the server closed the connection")],
    ids=["busy", "dropped"],
)
async def test_a_checkout_is_sent_again_with_the_same_idempotency_key(
    first: Callable[[], httpx.Response | Exception],
) -> None:
    transport, asked = answering(first(), placed())
    settings = OpsSettings(environment="test", order_api_url="http://order.test")
    async with httpx.AsyncClient(transport=transport, base_url="http://order.test") as client:
        order = await place_order(client, settings, "token", [CartLine("SERUM-NIA-30")])
    assert order.number == "SK-7KQ4-M2XD"
    keys = {request.headers["Idempotency-Key"] for request in asked}
    assert len(asked) == 2
    assert len(keys) == 1
