"""The Kafka transport's publish path as it was before the transport moved onto
FastStream's broker: an aiokafka producer of its own, records handed over in order and
awaited together. Kept only so that ``bench_relay.py`` can run the previous relay beside
the current one in the same run; the relay uses nothing of a transport but ``naming`` and
``publish``."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from aiokafka import AIOKafkaProducer

from shop.messaging import KafkaSettings, Naming
from shop.messaging.errors import PublishError
from shop.messaging.message import OutgoingMessage


class PreviousKafkaPublisher:
    name = "kafka"

    def __init__(self, settings: KafkaSettings, naming: Naming) -> None:
        self.naming = naming
        self._producer = AIOKafkaProducer(
            bootstrap_servers=settings.bootstrap_servers,
            client_id=settings.client_id,
            acks="all",
            linger_ms=settings.linger_ms,
            request_timeout_ms=settings.request_timeout_ms,
        )
        self._handing_over = asyncio.Lock()

    async def start(self) -> None:
        await self._producer.start()

    async def close(self) -> None:
        await self._producer.stop()

    async def publish(self, messages: Sequence[OutgoingMessage]) -> None:
        async with self._handing_over:
            futures = [
                await self._producer.send(
                    m.topic,
                    value=m.body,
                    key=None if m.key is None else m.key.encode(),
                    headers=[(k, v.encode()) for k, v in m.headers.items()],
                )
                for m in messages
            ]
        results = await asyncio.gather(*futures, return_exceptions=True)
        failed = {i for i, r in enumerate(results) if isinstance(r, BaseException)}
        if failed:
            raise PublishError(failed, next(r for r in results if isinstance(r, BaseException)))
