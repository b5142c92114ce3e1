"""Deletes of settled SQS messages go in batches, and each caller still gets its own
message's result."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any, cast

import pytest
from botocore.exceptions import ClientError

from shop.messaging.transports.sqs.acks import BatchedDeletes
from shop.messaging.transports.sqs.client import ReceiptExpired, SqsClient
from shop.messaging.transports.sqs.wire import SqsMessage


def message(n: int) -> SqsMessage:
    return SqsMessage(
        message_id=f"m{n}",
        receipt_handle=f"r{n}",
        body="{}",
        headers={},
        key=None,
        receive_count=1,
        first_received_at=None,
        sent_at=None,
    )


class Deleting:
    """The one client call the batches make, recorded; answers as scripted."""

    def __init__(self, answer: Any = None) -> None:
        self.calls: list[list[str]] = []
        self.answer = answer

    async def delete_each(self, url: str, messages: Sequence[SqsMessage]) -> list[Any]:
        self.calls.append([m.receipt_handle for m in messages])
        await asyncio.sleep(0)
        if isinstance(self.answer, Exception):
            raise self.answer
        if callable(self.answer):
            return [self.answer(m) for m in messages]
        return [None] * len(messages)


def deletes(client: Deleting, linger: float = 0.05) -> BatchedDeletes:
    return BatchedDeletes(cast(SqsClient, client), "queue-url", linger=linger)


async def test_deletes_settled_together_go_in_one_call_of_at_most_ten() -> None:
    client = Deleting()
    batched = deletes(client, linger=10)  # only a full batch goes before the end
    first_ten = [asyncio.create_task(batched.delete(message(n))) for n in range(10)]
    await asyncio.gather(*first_ten)
    assert client.calls == [[f"r{n}" for n in range(10)]]


async def test_a_lone_delete_goes_after_the_linger() -> None:
    client = Deleting()
    batched = deletes(client, linger=0.02)
    loop = asyncio.get_running_loop()
    started = loop.time()
    await asyncio.gather(batched.delete(message(1)), batched.delete(message(2)))
    assert client.calls == [["r1", "r2"]]
    assert 0.015 <= loop.time() - started < 1


async def test_each_caller_gets_its_own_messages_refusal() -> None:
    gone = ReceiptExpired("the receipt expired")
    client = Deleting(lambda m: gone if m.receipt_handle == "r2" else None)
    batched = deletes(client, linger=0.01)
    results = await asyncio.gather(
        *(batched.delete(message(n)) for n in range(1, 4)), return_exceptions=True
    )
    assert results == [None, gone, None]


async def test_a_failed_call_fails_every_delete_in_it() -> None:
    refused = ClientError({"Error": {"Code": "InternalError"}}, "DeleteMessageBatch")
    batched = deletes(Deleting(refused), linger=0.01)
    results = await asyncio.gather(
        batched.delete(message(1)), batched.delete(message(2)), return_exceptions=True
    )
    assert results == [refused, refused]


async def test_a_cancelled_caller_leaves_the_others_deletes_to_finish() -> None:
    client = Deleting()
    batched = deletes(client, linger=0.02)
    cancelled = asyncio.create_task(batched.delete(message(1)))
    other = asyncio.create_task(batched.delete(message(2)))
    await asyncio.sleep(0)
    cancelled.cancel()
    await other
    assert client.calls == [["r1", "r2"]]
    with pytest.raises(asyncio.CancelledError):
        await cancelled
