"""SQS's dead-letter courier: a consumer's dead letters wait in its dead-letter queue (put
there by the consumer, or by SQS itself through the queue's ``RedrivePolicy``) until the
worker has kept them; each is then deleted from the queue, so no copy outlives a purge. A
redrive sends the message to the consumer's own queue, which that consumer alone reads.

A message SQS moved there itself carries no dead-letter keys: what SQS knows of it stands
in for them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from shop.messaging import headers as h
from shop.messaging.deadletters import Arrival, StoredDeadLetter, read_dead_letter
from shop.messaging.errors import MessagingError
from shop.messaging.transports.sqs.client import BATCH_LIMIT, SqsClient
from shop.messaging.transports.sqs.topology import QueueLookup, SqsQueues
from shop.messaging.transports.sqs.wire import SqsMessage

MOVED_BY_SQS: Final = "MaxReceiveCountExceeded"
"""Error type of a dead letter that SQS moved itself (its worker never settled it)."""
_FETCH_VISIBILITY: Final = 120
"""How long a fetched dead letter stays hidden while the store takes it in."""
_FETCH_WAIT: Final = 1
"""A long poll asks every SQS server, so its empty answer means no message is left."""


class SqsDeadLetterCourier:
    def __init__(self, client: SqsClient, queues_of: QueueLookup) -> None:
        self._client = client
        self._queues_of = queues_of

    async def fetch(self, group: str, limit: int) -> list[Arrival]:
        queues = await self._queues_of(group)
        messages: list[SqsMessage] = []
        try:
            while len(messages) + BATCH_LIMIT <= max(limit, BATCH_LIMIT):
                batch = await self._client.receive(
                    queues.dead_letters_url, wait=_FETCH_WAIT, visibility=_FETCH_VISIBILITY
                )
                messages += batch
                if len(batch) < BATCH_LIMIT:
                    break
            moved_by_sqs = any(h.DEAD_LETTER_ERROR_TYPE not in m.headers for m in messages)
            max_receive_count = (
                await self._client.max_receive_count(queues.url) if moved_by_sqs else None
            )
        except BaseException:
            await self._client.release(queues.dead_letters_url, messages)
            raise
        return [
            Arrival(_letter(group, queues, message, max_receive_count), handle=message)
            for message in messages
        ]

    async def fetched(self, group: str, arrivals: Sequence[Arrival]) -> None:
        queues = await self._queues_of(group)
        refused = await self._client.delete_many(queues.dead_letters_url, _messages(arrivals))
        if refused:
            # Kept already: collected again, they are kept once.
            raise MessagingError(f"SQS did not delete the dead letters {refused} of {group}")

    async def unfetched(self, group: str, arrivals: Sequence[Arrival]) -> None:
        queues = await self._queues_of(group)
        await self._client.release(queues.dead_letters_url, _messages(arrivals))

    async def redeliver(self, group: str, letter: StoredDeadLetter) -> None:
        queues = await self._queues_of(group)
        headers = h.original_headers(dict(letter.headers))
        headers[h.ORIGIN] = letter.source or queues.name
        await self._client.send(
            queues.url, letter.body.decode("utf-8", errors="replace"), headers, letter.key
        )


def _messages(arrivals: Sequence[Arrival]) -> list[SqsMessage]:
    messages = [arrival.handle for arrival in arrivals]
    assert all(isinstance(m, SqsMessage) for m in messages)
    return messages  # type: ignore[return-value]


def _letter(
    group: str, queues: SqsQueues, message: SqsMessage, max_receive_count: int | None
) -> StoredDeadLetter:
    stored = dict(message.headers)
    if h.DEAD_LETTER_ERROR_TYPE not in stored:
        stored.update(_moved_by_sqs(group, queues, message, max_receive_count))
    return read_dead_letter(
        message.message_id, message.body.encode("utf-8"), stored, key=message.key
    )


def _moved_by_sqs(
    group: str, queues: SqsQueues, message: SqsMessage, max_receive_count: int | None
) -> dict[str, str]:
    """Dead-letter keys for a message SQS moved itself (RedrivePolicy): no worker ever
    settled it, so nobody wrote why; what SQS knows stands in."""
    metadata = {
        h.DEAD_LETTER_CONSUMER: group,
        h.DEAD_LETTER_SOURCE: message.headers.get(h.ORIGIN) or queues.name,
        h.DEAD_LETTER_ERROR_TYPE: MOVED_BY_SQS,
        h.DEAD_LETTER_ERROR_MESSAGE: (
            "received more often than the queue's maxReceiveCount without being settled "
            "(its handler crashed or outlasted the visibility timeout each time)"
        ),
        h.DEAD_LETTER_ATTEMPTS: str(max_receive_count or 0),
    }
    # When it was first sent is the best SQS can tell of when its failures began.
    sent_at = message.sent_at or message.first_received_at
    if sent_at is not None:
        metadata[h.DEAD_LETTER_FIRST_FAILURE_AT] = sent_at.isoformat()
        metadata[h.DEAD_LETTER_LAST_FAILURE_AT] = sent_at.isoformat()
    return metadata
