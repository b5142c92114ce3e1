"""Dead letters, the same on every transport: the original message byte for byte, and why.

Each transport stores them its own way (a Kafka topic, an SQS queue, a list) behind
:class:`DeadLetterStore`; :class:`DeadLetters` is the API people and tools use.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Final, Protocol

import structlog

from shop.messaging import headers as h
from shop.messaging.message import Delivery
from shop.messaging.outcome import DeadLetter
from shop.messaging.privacy import mask_emails

log = structlog.get_logger("shop.messaging")

KEPT_PREFIX_BYTES: Final = 64 * 1024
"""How much of a body too large to keep whole a dead letter keeps: enough to recognise the
message, small enough for any broker's limit beside the dead-letter headers."""


@dataclass(frozen=True, slots=True)
class StoredDeadLetter:
    id: str
    """Unique within its consumer's dead letters (Kafka ``partition-offset``, SQS message id)."""
    group: str
    """The consumer that gave up on it (``x-dead-letter-consumer``)."""
    source: str
    message_type: str | None
    body: bytes
    headers: Mapping[str, str]
    """The producer's headers, as they were."""
    error_type: str
    error_message: str
    attempts: int
    first_failure_at: datetime
    last_failure_at: datetime
    key: str | None = None
    """The aggregate key it was published with: a redrive keeps it, and so its partition."""
    whole_body_size: int | None = None
    """Set when the message was too large to keep whole: ``body`` is then only a prefix,
    and this the size of the whole body (``x-dead-letter-body-sha256`` has its digest)."""

    @property
    def truncated(self) -> bool:
        """Only a prefix of the body was kept: redriving it cannot succeed."""
        return self.whole_body_size is not None


@dataclass(frozen=True, slots=True)
class DeadLetterFilter:
    """All fields optional; a dead letter matches when it matches every field given."""

    message_type: str | None = None
    error_type: str | None = None
    error_contains: str | None = None

    def matches(self, letter: StoredDeadLetter) -> bool:
        return (
            (self.message_type is None or letter.message_type == self.message_type)
            and (self.error_type is None or letter.error_type == self.error_type)
            and (
                self.error_contains is None
                or self.error_contains.lower() in letter.error_message.lower()
            )
        )


def dead_letter_headers(group: str, delivery: Delivery, outcome: DeadLetter) -> dict[str, str]:
    """The original headers plus the dead-letter metadata, under the constant keys."""
    result = h.original_headers(dict(delivery.headers))
    result.update(
        {
            h.DEAD_LETTER_CONSUMER: group,
            h.DEAD_LETTER_SOURCE: delivery.source,
            h.DEAD_LETTER_ERROR_TYPE: outcome.failure.error_type,
            # Header values are kept short: SQS attributes and Kafka headers have limits.
            # A refusal may quote the customer's address: masked, as in the logs.
            h.DEAD_LETTER_ERROR_MESSAGE: mask_emails(outcome.failure.error_message)[:2000],
            h.DEAD_LETTER_ATTEMPTS: str(outcome.attempts),
            h.DEAD_LETTER_FIRST_FAILURE_AT: outcome.first_failure_at.isoformat(),
            h.DEAD_LETTER_LAST_FAILURE_AT: outcome.last_failure_at.isoformat(),
        }
    )
    return result


def truncated_dead_letter(
    body: bytes, stored: Mapping[str, str], *, keep: int = KEPT_PREFIX_BYTES
) -> tuple[bytes, dict[str, str]]:
    """A dead letter too large for the broker, cut to fit: the first ``keep`` bytes of its
    body, and the whole body's size and SHA-256 beside the reason it is a dead letter."""
    return body[:keep], {
        **stored,
        h.DEAD_LETTER_BODY_SIZE: str(len(body)),
        h.DEAD_LETTER_BODY_SHA256: hashlib.sha256(body).hexdigest(),
    }


def read_dead_letter(
    letter_id: str, body: bytes, stored: Mapping[str, str], key: str | None = None
) -> StoredDeadLetter:
    """Rebuild a dead letter from what a transport stored (``dead_letter_headers``)."""
    now = datetime.now(UTC).isoformat()
    return StoredDeadLetter(
        id=letter_id,
        group=stored.get(h.DEAD_LETTER_CONSUMER, ""),
        source=stored.get(h.DEAD_LETTER_SOURCE, ""),
        message_type=stored.get(h.MESSAGE_TYPE),
        body=body,
        headers=h.original_headers(dict(stored)),
        error_type=stored.get(h.DEAD_LETTER_ERROR_TYPE, "unknown"),
        error_message=stored.get(h.DEAD_LETTER_ERROR_MESSAGE, ""),
        attempts=int(stored.get(h.DEAD_LETTER_ATTEMPTS, "0")),
        first_failure_at=datetime.fromisoformat(stored.get(h.DEAD_LETTER_FIRST_FAILURE_AT, now)),
        last_failure_at=datetime.fromisoformat(stored.get(h.DEAD_LETTER_LAST_FAILURE_AT, now)),
        key=key,
        whole_body_size=_int_or_none(stored.get(h.DEAD_LETTER_BODY_SIZE)),
    )


def _int_or_none(value: str | None) -> int | None:
    try:
        return None if value is None else int(value)
    except ValueError:
        return None


class DeadLetterStore(Protocol):
    """A transport's dead letters, kept apart by consumer (``group``)."""

    async def list(self, group: str) -> list[StoredDeadLetter]:
        """Every dead letter of ``group``, oldest first."""
        ...

    async def redrive(self, group: str, letter: StoredDeadLetter) -> None:
        """Give ``letter`` back to ``group`` alone (attempts start again) and remove it."""
        ...

    async def purge(self, group: str, letters: Sequence[StoredDeadLetter]) -> None:
        """Remove ``letters`` for good."""
        ...

    async def redrive_all(self, group: str, *, per_second: float) -> int:
        """Give every dead letter back to ``group``, at most ``per_second`` a second;
        how many went back. A transport with a native bulk move uses it."""
        ...


async def redrive_each(
    store: DeadLetterStore, group: str, letters: Sequence[StoredDeadLetter], per_second: float
) -> int:
    """Redrive ``letters`` one by one, spaced so that at most ``per_second`` go a second:
    a large redrive must not flood the consumer or what it calls."""
    if per_second <= 0:
        raise ValueError("per_second must be positive")
    whole = [letter for letter in letters if not letter.truncated]
    if len(whole) < len(letters):
        log.warning(
            "dead letters kept truncated are not redriven; purge them once dealt with",
            group=group,
            truncated=[letter.id for letter in letters if letter.truncated],
        )
    for index, letter in enumerate(whole):
        if index:
            await asyncio.sleep(1 / per_second)
        await store.redrive(group, letter)
    return len(whole)


class DeadLetters:
    """List, show, redrive and purge the dead letters of one consumer (``group``)."""

    def __init__(self, store: DeadLetterStore, group: str) -> None:
        self.store = store
        self.group = group

    async def list(self, where: DeadLetterFilter | None = None) -> list[StoredDeadLetter]:
        letters = await self.store.list(self.group)
        return [letter for letter in letters if where is None or where.matches(letter)]

    async def show(self, letter_id: str) -> StoredDeadLetter:
        for letter in await self.store.list(self.group):
            if letter.id == letter_id:
                return letter
        raise KeyError(f"{self.group} has no dead letter {letter_id!r}")

    async def redrive_one(self, letter_id: str) -> StoredDeadLetter:
        letter = await self.show(letter_id)
        if letter.truncated:
            raise ValueError(
                f"dead letter {letter_id!r} of {self.group} was kept truncated "
                f"({letter.whole_body_size} bytes, too large for the broker): it cannot be "
                "redriven; purge it once dealt with"
            )
        await self.store.redrive(self.group, letter)
        return letter

    async def redrive(
        self, where: DeadLetterFilter | None = None, *, per_second: float = 10.0
    ) -> int:
        """Redrive every matching dead letter (all of them without a filter), at most
        ``per_second`` of them a second; how many went back."""
        if where is None:
            return await self.store.redrive_all(self.group, per_second=per_second)
        return await redrive_each(self.store, self.group, await self.list(where), per_second)

    async def purge(self, where: DeadLetterFilter | None = None) -> int:
        letters = await self.list(where)
        await self.store.purge(self.group, letters)
        return len(letters)
