"""Kafka's dead-letter courier: a consumer's dead letters are the records of its dead-letter
topic, collected in a consumer group of their own (``<group>-dead-letters``) that commits
only what the store has kept; a redrive goes to the consumer's 0 s delay topic, which that
consumer alone reads.

Kafka cannot delete one record: what was collected stays in the topic until its
``retention.ms`` (the transport's ``dead_letter_retention_seconds``, set when the topic is
created), which bounds how long a purged letter's copy outlives the purge.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from shop.messaging import headers as h
from shop.messaging.deadletters import Arrival, StoredDeadLetter, read_dead_letter
from shop.messaging.naming import Naming
from shop.messaging.transports.kafka.client import KafkaClient, TopicReader
from shop.messaging.transports.kafka.topology import dead_letter_collector_group
from shop.messaging.transports.kafka.wire import KafkaRecord

_FETCH_WAIT_MS: Final = 500
"""How long one fetch waits for a record when none is there."""


class KafkaDeadLetterCourier:
    def __init__(self, client: KafkaClient, naming: Naming) -> None:
        self._client = client
        self._naming = naming
        self._readers: dict[str, TopicReader] = {}
        self._markers: dict[str, list[KafkaRecord]] = {}

    def _reader(self, group: str) -> TopicReader:
        reader = self._readers.get(group)
        if reader is None:
            reader = self._client.topic_reader(
                dead_letter_collector_group(self._naming, group),
                self._naming.dead_letters(group),
            )
            self._readers[group] = reader
        return reader

    async def fetch(self, group: str, limit: int) -> list[Arrival]:
        reader = self._reader(group)
        records = await reader.fetch(limit, wait_ms=_FETCH_WAIT_MS)
        # A marker the topic's earlier store appended when it redrove or purged a letter
        # carries no letter: it is committed with the letters fetched beside it.
        markers = [r for r in records if h.DEAD_LETTER_RESOLVES in r.headers]
        letters = [r for r in records if h.DEAD_LETTER_RESOLVES not in r.headers]
        if not letters:
            await reader.commit_past(markers)
            return []
        self._markers[group] = markers
        return [
            Arrival(read_dead_letter(_lasting_id(r), r.body, r.headers, key=r.key), handle=r)
            for r in letters
        ]

    async def fetched(self, group: str, arrivals: Sequence[Arrival]) -> None:
        passed = self._markers.pop(group, [])
        await self._reader(group).commit_past([*passed, *map(_record, arrivals)])

    async def unfetched(self, group: str, arrivals: Sequence[Arrival]) -> None:
        passed = self._markers.pop(group, [])
        self._reader(group).rewind_to([*passed, *map(_record, arrivals)])

    async def redeliver(self, group: str, letter: StoredDeadLetter) -> None:
        # Without an attempt count the message starts afresh, with its original headers.
        await self._client.send(
            self._naming.delay_topic(group, 0),
            letter.body,
            {**h.original_headers(dict(letter.headers)), h.ORIGIN: letter.source},
            letter.key,
        )

    async def close(self) -> None:
        readers, self._readers = list(self._readers.values()), {}
        for reader in readers:
            await reader.stop()


def _record(arrival: Arrival) -> KafkaRecord:
    assert isinstance(arrival.handle, KafkaRecord)
    return arrival.handle


def _lasting_id(record: KafkaRecord) -> str:
    """``partition-offset-timestamp``: a topic deleted and created again numbers its records
    from 0 again, and a new letter under an old one's partition and offset would be taken
    for it (collected twice) and dropped. Its producer's timestamp, in milliseconds, tells
    them apart."""
    return f"{record.id}-{record.timestamp}"
