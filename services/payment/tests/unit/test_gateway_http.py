"""One request to a gateway's API, as the gateway's answers decide it: retried while a
retry may pass, the gateway's word on when to come back kept, and the provider's circuit
breaker told whether the gateway answered at all."""

from __future__ import annotations

from collections.abc import Callable

import httpx
import pytest

from shop.messaging.breaker import watching_contact
from shop.payment.adapters.gateway_http import request
from shop.payment.domain.errors import GatewayUnavailable

NO_PAUSE = (0.0, 0.0)


def client(answer: Callable[[httpx.Request], httpx.Response], seen: list[str]) -> httpx.AsyncClient:
    def handle(sent: httpx.Request) -> httpx.Response:
        seen.append(sent.url.path)
        return answer(sent)

    return httpx.AsyncClient(transport=httpx.MockTransport(handle), base_url="http://gateway")


@pytest.mark.parametrize(
    ("status", "retry_after", "too_fast"),
    [(429, "7", True), (503, "3", False), (429, "Thu, 01 Jan 1970 00:00:00 GMT", True)],
)
async def test_a_gateway_that_says_when_to_come_back_is_not_asked_again_before(
    status: int, retry_after: str, too_fast: bool
) -> None:
    seen: list[str] = []
    busy = client(lambda _: httpx.Response(status, headers={"Retry-After": retry_after}), seen)
    with pytest.raises(GatewayUnavailable) as raised:
        await request(busy, "midtrans", "GET", "/v2/1/status", delays=NO_PAUSE)
    assert seen == ["/v2/1/status"], "asked once: it said when to come back"
    expected = float(retry_after) if retry_after.isdigit() else 0.0  # a date long past
    assert raised.value.retry_after == expected
    assert raised.value.too_fast is too_fast


async def test_a_429_without_a_time_is_tried_again_then_said_too_fast() -> None:
    seen: list[str] = []
    busy = client(lambda _: httpx.Response(429), seen)
    with pytest.raises(GatewayUnavailable) as raised:
        await request(busy, "midtrans", "GET", "/v2/1/status", delays=NO_PAUSE)
    assert len(seen) == 3
    assert raised.value.retry_after is None
    assert raised.value.too_fast is True


async def test_any_answer_tells_the_breaker_the_gateway_is_there_and_no_answer_does_not() -> None:
    seen: list[str] = []
    with watching_contact() as contact:
        answered = client(lambda _: httpx.Response(200, json={}), seen)
        await request(answered, "midtrans", "GET", "/v2/1/status", delays=NO_PAUSE)
    assert contact.answered

    def unreachable(_: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("connection refused")

    with watching_contact() as contact, pytest.raises(GatewayUnavailable):
        await request(client(unreachable, seen), "midtrans", "GET", "/x", delays=NO_PAUSE)
    assert not contact.answered
    failing = client(lambda _: httpx.Response(502), seen)
    with watching_contact() as contact, pytest.raises(GatewayUnavailable):
        await request(failing, "midtrans", "GET", "/x", delays=NO_PAUSE)
    assert not contact.answered, "a 5xx says it cannot answer"


async def test_a_429_once_is_remembered_after_the_tries_that_follow_it() -> None:
    replies = iter([httpx.Response(429), httpx.Response(503), httpx.Response(503)])
    busy = client(lambda _: next(replies), [])
    with pytest.raises(GatewayUnavailable) as raised:
        await request(busy, "midtrans", "GET", "/v2/1/status", delays=NO_PAUSE)
    assert raised.value.too_fast is True
    assert raised.value.answered is False, "its last try got no answer of the gateway's"


@pytest.mark.parametrize("value", [b"\xb2", b"1.5", b"soon", b"-3"])
async def test_a_retry_after_that_is_no_number_of_seconds_nor_a_date_is_ignored(
    value: bytes,
) -> None:
    # b"\xb2" reads as "²", a digit to str.isdigit and no number to float().
    busy = client(lambda _: httpx.Response(503, headers={"Retry-After": value}), [])
    with pytest.raises(GatewayUnavailable) as raised:
        await request(busy, "midtrans", "GET", "/v2/1/status", delays=NO_PAUSE)
    assert raised.value.retry_after is None
