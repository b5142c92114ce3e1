"""The Kafka transport's publish: every record handed over, then every receipt waited for;
failures reported by index, and a cancelled publish leaves no receipt behind."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping

import pytest
from aiokafka.errors import KafkaTimeoutError
from aiokafka.structs import RecordMetadata

from shop.messaging.errors import PublishError
from shop.messaging.message import OutgoingMessage
from shop.messaging.settings import KafkaSettings
from shop.messaging.transports.kafka import KafkaTransport


class HandOver:
    """A client whose receipts the test settles."""

    def __init__(self) -> None:
        self.receipts: list[asyncio.Future[RecordMetadata]] = []

    async def enqueue(
        self, topic: str, body: bytes, headers: Mapping[str, str], key: str | None
    ) -> asyncio.Future[RecordMetadata]:
        receipt: asyncio.Future[RecordMetadata] = asyncio.get_running_loop().create_future()
        self.receipts.append(receipt)
        return receipt


def transport_over(client: HandOver) -> KafkaTransport:
    transport = KafkaTransport(KafkaSettings())
    transport._client = client  # type: ignore[assignment]
    return transport


MESSAGES = [OutgoingMessage(topic="t", key=f"k{i}", body=b"{}") for i in range(4)]


async def test_the_receipts_that_failed_are_reported_by_index() -> None:
    client = HandOver()
    publishing = asyncio.create_task(transport_over(client).publish(MESSAGES))
    await asyncio.sleep(0)
    timeout = KafkaTimeoutError()
    for i, receipt in enumerate(client.receipts):
        if i in (1, 3):
            receipt.set_exception(timeout)
        else:
            receipt.set_result(RecordMetadata("t", 0, None, i, 0, 0, -1))  # type: ignore[arg-type]
    with pytest.raises(PublishError) as raised:
        await publishing
    assert raised.value.failed == {1, 3}
    assert raised.value.cause is timeout


async def test_a_cancelled_publish_cancels_the_receipts_not_settled() -> None:
    client = HandOver()
    publishing = asyncio.create_task(transport_over(client).publish(MESSAGES))
    await asyncio.sleep(0)
    client.receipts[0].set_result(RecordMetadata("t", 0, None, 0, 0, 0, -1))  # type: ignore[arg-type]
    await asyncio.sleep(0)
    publishing.cancel()
    with pytest.raises(asyncio.CancelledError):
        await publishing
    assert [r.cancelled() for r in client.receipts] == [False, True, True, True]
