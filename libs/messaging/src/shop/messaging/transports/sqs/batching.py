"""How a relay's batch is cut into SNS PublishBatch calls: in waves, so that a key's
messages keep their order, and each wave in batches that one call takes."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterator, Mapping, Sequence
from typing import Final

from shop.messaging.transports.sqs.client import BATCH_LIMIT

BATCH_BYTES: Final = 256 * 1024
"""What one PublishBatch may carry in all, bodies and attributes together; SNS refuses
the whole call beyond it (each message alone has the same limit)."""


def waves(keys: Sequence[str]) -> list[list[int]]:
    """Indexes by wave: the n-th message of each key (in ``keys``, one per message) is in
    the n-th wave, so a wave holds at most one message of a key."""
    by_rank: list[list[int]] = []
    seen: Counter[str] = Counter()
    for index, key in enumerate(keys):
        rank = seen[key]
        seen[key] += 1
        if rank == len(by_rank):
            by_rank.append([])
        by_rank[rank].append(index)
    return by_rank


def topic_batches(
    indexes: Sequence[int], topics: Mapping[int, str], sizes: Mapping[int, int]
) -> Iterator[list[int]]:
    """``indexes`` in batches of one topic, each at most :data:`BATCH_LIMIT` messages and
    :data:`BATCH_BYTES` in all. A message over that limit goes alone, so that SNS's refusal
    falls on it and not on its neighbours."""
    by_topic: dict[str, list[int]] = defaultdict(list)
    for index in indexes:
        by_topic[topics[index]].append(index)
    for same_topic in by_topic.values():
        batch: list[int] = []
        size = 0
        for index in same_topic:
            if batch and (len(batch) == BATCH_LIMIT or size + sizes[index] > BATCH_BYTES):
                yield batch
                batch, size = [], 0
            batch.append(index)
            size += sizes[index]
        if batch:
            yield batch


def wire_size(body: str, attributes: Mapping[str, Mapping[str, str]]) -> int:
    """What a message counts against SNS's limit: its body and its attributes' names,
    types and values, in bytes."""
    size = len(body.encode("utf-8"))
    for name, attribute in attributes.items():
        size += len(name.encode("utf-8"))
        size += sum(len(part.encode("utf-8")) for part in attribute.values())
    return size
