"""Kafka's dead-letter store: a consumer's dead letters are the records of its dead-letter
topic, less those a marker settled.

Kafka cannot delete one record, so redriving or purging a dead letter appends a marker
record (empty, with ``x-dead-letter-resolves`` naming the dead letter) to the same topic.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from shop.messaging import headers as h
from shop.messaging.deadletters import StoredDeadLetter, read_dead_letter, redrive_each
from shop.messaging.naming import Naming
from shop.messaging.transports.kafka.client import KafkaClient


class KafkaDeadLetterStore:
    def __init__(self, client: KafkaClient, naming: Naming) -> None:
        self._client = client
        self._naming = naming

    async def list(self, group: str) -> list[StoredDeadLetter]:
        records = await self._client.read_topic(self._naming.dead_letters(group))
        settled = {
            r.headers[h.DEAD_LETTER_RESOLVES]
            for r in records
            if h.DEAD_LETTER_RESOLVES in r.headers
        }
        letters = [
            r for r in records if h.DEAD_LETTER_RESOLVES not in r.headers and r.id not in settled
        ]
        letters.sort(key=lambda r: (r.timestamp, r.partition, r.offset))
        return [read_dead_letter(r.id, r.body, r.headers, key=r.key) for r in letters]

    async def redrive(self, group: str, letter: StoredDeadLetter) -> None:
        # The 0 s delay topic belongs to this consumer alone, so only the consumer that
        # failed sees the message again; without an attempt count it starts afresh.
        await self._client.send(
            self._naming.delay_topic(group, 0),
            letter.body,
            {**h.original_headers(dict(letter.headers)), h.ORIGIN: letter.source},
            letter.key,
        )
        await self._mark_settled(group, [letter])

    async def redrive_all(self, group: str, *, per_second: float) -> int:
        return await redrive_each(self, group, await self.list(group), per_second)

    async def purge(self, group: str, letters: Sequence[StoredDeadLetter]) -> None:
        await self._mark_settled(group, letters)

    async def _mark_settled(self, group: str, letters: Sequence[StoredDeadLetter]) -> None:
        topic = self._naming.dead_letters(group)
        futures = [
            await self._client.enqueue(topic, b"", {h.DEAD_LETTER_RESOLVES: x.id}, None)
            for x in letters
        ]
        await asyncio.gather(*futures)
