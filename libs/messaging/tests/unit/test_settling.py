"""Writing an outcome: tries until written, never retries a message that is too large,
gives up loudly after the outcome timeout, and cuts a dead letter until it fits."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from datetime import UTC, datetime

import pytest

from shop.messaging import headers as h
from shop.messaging.deadletters import KEPT_PREFIX_BYTES, read_dead_letter
from shop.messaging.errors import MessageTooLarge, OutcomeNotWritten
from shop.messaging.outcome import Failure, Retry
from shop.messaging.settling import too_large_to_retry, write_dead_letter, write_until_done


def connection_lost(error: Exception) -> bool:
    return isinstance(error, ConnectionError)


class Flaky:
    def __init__(self, failures: int, error: Exception) -> None:
        self.failures = failures
        self.error = error
        self.calls = 0

    async def __call__(self) -> None:
        self.calls += 1
        if self.calls <= self.failures:
            raise self.error


async def test_an_outcome_is_written_once_the_broker_takes_it() -> None:
    write = Flaky(2, ConnectionError("broker away"))
    await write_until_done(write, within=5, what="a retry", transient=connection_lost)
    assert write.calls == 3


async def test_an_outcome_that_keeps_failing_stops_with_the_reason() -> None:
    write = Flaky(1_000, ConnectionError("broker away"))
    with pytest.raises(OutcomeNotWritten, match=r"a dead letter.*broker away"):
        await write_until_done(write, within=0.5, what="a dead letter", transient=lambda e: True)
    assert 1 < write.calls < 10


async def test_a_message_too_large_is_never_tried_again() -> None:
    write = Flaky(1_000, MessageTooLarge("2 MB"))
    with pytest.raises(MessageTooLarge):
        await write_until_done(write, within=5, what="a retry", transient=lambda e: True)
    assert write.calls == 1


async def test_an_error_not_worth_retrying_reaches_the_caller_at_once() -> None:
    write = Flaky(1_000, KeyError("bug"))
    with pytest.raises(KeyError):
        await write_until_done(write, within=5, what="a retry", transient=connection_lost)
    assert write.calls == 1


class Broker:
    """Keeps what fits in ``limit`` bytes of body."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.kept: list[tuple[bytes, dict[str, str]]] = []

    async def write(self, body: bytes, stored: Mapping[str, str]) -> None:
        if len(body) > self.limit:
            raise MessageTooLarge(f"{len(body)} bytes")
        self.kept.append((body, dict(stored)))


async def test_a_dead_letter_that_fits_is_kept_whole() -> None:
    broker = Broker(limit=1_000)
    await write_dead_letter(broker.write, b"small", {h.DEAD_LETTER_ERROR_TYPE: "Refused"})
    assert broker.kept == [(b"small", {h.DEAD_LETTER_ERROR_TYPE: "Refused"})]


@pytest.mark.parametrize("limit", [KEPT_PREFIX_BYTES, 10_000, 100, 0])
async def test_a_dead_letter_too_large_is_cut_until_it_fits_with_its_size_and_digest(
    limit: int,
) -> None:
    body = bytes(range(256)) * 1_000
    broker = Broker(limit)
    await write_dead_letter(broker.write, body, {h.DEAD_LETTER_ERROR_TYPE: "Refused"})
    [(kept, stored)] = broker.kept
    assert body.startswith(kept)
    assert len(kept) <= limit
    assert stored[h.DEAD_LETTER_ERROR_TYPE] == "Refused"
    assert stored[h.DEAD_LETTER_BODY_SHA256] == hashlib.sha256(body).hexdigest()
    letter = read_dead_letter("1", kept, stored)
    assert letter.truncated
    assert letter.whole_body_size == len(body)


async def test_a_broker_that_refuses_even_the_reason_alone_is_an_error() -> None:
    class Refusing:
        async def write(self, body: bytes, stored: Mapping[str, str]) -> None:
            raise MessageTooLarge("headers alone")

    with pytest.raises(MessageTooLarge):
        await write_dead_letter(Refusing().write, b"x" * 100, {})


def test_a_retry_too_large_to_write_becomes_a_dead_letter_that_says_why() -> None:
    first = datetime(2026, 1, 1, tzinfo=UTC)
    retry = Retry(delay=2, attempt=3, failure=Failure("Timeout", "smtp"), first_failure_at=first)
    letter = too_large_to_retry(retry, MessageTooLarge("2000000 bytes"))
    assert letter.failure.error_type == "MessageTooLarge"
    assert "2000000 bytes" in letter.failure.error_message
    assert "Timeout: smtp" in letter.failure.error_message
    assert (letter.attempts, letter.first_failure_at) == (3, first)


class SizedBroker:
    """Keeps a record only when its body and headers together fit in ``limit`` bytes."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.kept: list[tuple[bytes, dict[str, str]]] = []

    async def write(self, body: bytes, stored: Mapping[str, str]) -> None:
        size = len(body) + sum(len(k) + len(v) for k, v in stored.items())
        if size > self.limit:
            raise MessageTooLarge(f"{size} bytes")
        self.kept.append((body, dict(stored)))


async def test_a_small_body_under_large_headers_is_cut_too_never_kept_whole_but_flagged() -> None:
    body = b"x" * 1_000
    stored = {h.DEAD_LETTER_ERROR_TYPE: "Refused", "x-big": "y" * 1_500}
    broker = SizedBroker(limit=2_000)
    await write_dead_letter(broker.write, body, stored)
    [(kept, written)] = broker.kept
    assert len(kept) < len(body)
    assert written["x-big"] == stored["x-big"]
    assert read_dead_letter("1", kept, written).whole_body_size == len(body)


async def test_headers_too_large_alone_are_dropped_and_the_reason_is_kept() -> None:
    stored = {
        h.MESSAGE_TYPE: "order.created",
        h.DEAD_LETTER_ERROR_TYPE: "Refused",
        h.DEAD_LETTER_ERROR_MESSAGE: "no such product",
        "x-huge": "y" * 10_000,
    }
    broker = SizedBroker(limit=1_000)
    await write_dead_letter(broker.write, b"x" * 5_000, stored)
    [(kept, written)] = broker.kept
    assert kept == b""
    assert "x-huge" not in written
    letter = read_dead_letter("1", kept, written)
    assert (letter.message_type, letter.error_type) == ("order.created", "Refused")
    assert letter.error_message == "no such product"
    assert letter.whole_body_size == 5_000
