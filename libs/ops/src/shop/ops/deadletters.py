"""Dead letters across every consumer group of the shop, asked of the worker that runs
each group (``/internal/v1/dead-letters`` on its operator port, with the operator token):
list them (filtered), show one, redrive one or all that match (at a bounded rate), purge
those that match. A worker serves its own groups' letters from its transport's dead-letter
store, so a redrive goes back to the consumer that failed, and to it alone; this library
never reaches the bus for them."""

from __future__ import annotations

import asyncio
import base64
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from shop.ops.errors import OpsError
from shop.ops.internal import NotFoundThere, OperatorPort, operator_port, quoted
from shop.ops.services import ConsumerGroupOf, consumer_groups
from shop.ops.settings import OpsSettings

DEAD_LETTERS_PATH = "/internal/v1/dead-letters"


class NoSuchDeadLetter(OpsError):
    """The group's worker holds no dead letter by that id (redriven or purged already?)."""


@dataclass(frozen=True, slots=True)
class DeadLetterEntry:
    """One dead letter, with the consumer group and the service it belongs to."""

    id: str
    """Unique within its group (Kafka ``partition-offset``, SQS message id)."""
    service: str
    group: str
    source: str
    """Where the message had come from (its topic or queue)."""
    message_type: str | None
    key: str | None
    error_type: str
    error_message: str
    attempts: int
    first_failure_at: datetime
    last_failure_at: datetime
    truncated: bool
    """Only a prefix of the body was kept: it cannot be redriven."""
    body: bytes
    headers: Mapping[str, str]

    @classmethod
    def of(cls, service: str, document: Mapping[str, Any]) -> DeadLetterEntry:
        """The letter a worker's internal API answered with (its ``dead_letter_document``)."""
        return cls(
            id=str(document["id"]),
            service=service,
            group=str(document["group"]),
            source=str(document["source"]),
            message_type=document.get("message_type"),
            key=document.get("key"),
            error_type=str(document["error_type"]),
            error_message=str(document["error_message"]),
            attempts=int(document["attempts"]),
            first_failure_at=datetime.fromisoformat(document["first_failure_at"]),
            last_failure_at=datetime.fromisoformat(document["last_failure_at"]),
            truncated=bool(document["truncated"]),
            body=base64.b64decode(document["body_base64"]),
            headers={str(k): str(v) for k, v in document.get("headers", {}).items()},
        )


@dataclass(frozen=True, slots=True)
class DeadLetterQuery:
    """All fields optional; a dead letter matches when it matches every field given."""

    service: str | None = None
    """Only the groups that this service's worker runs (``order-service``)."""
    group: str | None = None
    message_type: str | None = None
    """``order.created``."""
    error_type: str | None = None
    """The exception's name (``PermanentError``, ``EmailRejected``, …)."""
    contains: str | None = None
    """Text (any case) in the error message, the key or the body. The workers filter by
    type and error type; this is looked for here, in what they answered."""

    def takes(self, consumer: ConsumerGroupOf) -> bool:
        return (self.service is None or consumer.service == self.service) and (
            self.group is None or consumer.group == self.group
        )

    @property
    def params(self) -> dict[str, str]:
        """What a worker's ``GET /internal/v1/dead-letters`` filters by itself."""
        asked = {"message_type": self.message_type, "error_type": self.error_type}
        return {name: value for name, value in asked.items() if value is not None}

    def matches(self, letter: DeadLetterEntry) -> bool:
        if self.message_type is not None and letter.message_type != self.message_type:
            return False
        if self.error_type is not None and letter.error_type != self.error_type:
            return False
        if self.contains is None:
            return True
        needle = self.contains.lower()
        return any(
            needle in text.lower()
            for text in (
                letter.error_message,
                letter.key or "",
                letter.body.decode("utf-8", errors="replace"),
            )
        )


@dataclass(frozen=True, slots=True)
class GroupCount:
    """How many dead letters of one group an operation moved or removed."""

    service: str
    group: str
    count: int


def _chosen(query: DeadLetterQuery) -> list[ConsumerGroupOf]:
    consumers = [consumer for consumer in consumer_groups() if query.takes(consumer)]
    if not consumers:
        known = ", ".join(sorted({c.group for c in consumer_groups()}))
        raise OpsError(
            f"no consumer group matches service={query.service!r} group={query.group!r} "
            f"(the groups: {known})"
        )
    return consumers


def _letter_path(group: str, letter_id: str, action: str = "") -> str:
    path = f"{DEAD_LETTERS_PATH}/{quoted(group)}/{quoted(letter_id)}"
    return f"{path}/{action}" if action else path


async def _matching(
    port: OperatorPort, consumer: ConsumerGroupOf, query: DeadLetterQuery
) -> list[DeadLetterEntry]:
    answer = await port.get(DEAD_LETTERS_PATH, {"group": consumer.group, **query.params})
    letters = [DeadLetterEntry.of(consumer.service, one) for one in answer["dead_letters"]]
    return [letter for letter in letters if query.matches(letter)]


async def list_dead_letters(
    settings: OpsSettings, query: DeadLetterQuery | None = None
) -> list[DeadLetterEntry]:
    """Every matching dead letter, by service and group, oldest first within a group."""
    query = query or DeadLetterQuery()
    entries: list[DeadLetterEntry] = []
    for consumer in _chosen(query):
        async with operator_port(settings, consumer.service) as port:
            entries += await _matching(port, consumer, query)
    return entries


async def _group_of(settings: OpsSettings, letter_id: str, group: str | None) -> ConsumerGroupOf:
    """``group``'s consumer, or (None) that of the one group that holds ``letter_id``."""
    if group is not None:
        (consumer,) = _chosen(DeadLetterQuery(group=group))
        return consumer
    holders = [
        consumer
        for consumer in _chosen(DeadLetterQuery())
        if any(
            letter.id == letter_id
            for letter in await list_dead_letters(settings, DeadLetterQuery(group=consumer.group))
        )
    ]
    if not holders:
        raise NoSuchDeadLetter(f"no dead letter {letter_id!r} in any consumer group")
    if len(holders) > 1:
        groups = ", ".join(consumer.group for consumer in holders)
        raise OpsError(f"dead letter {letter_id!r} is in several groups ({groups}): name one")
    return holders[0]


async def _one(
    settings: OpsSettings, letter_id: str, group: str | None, action: str = ""
) -> DeadLetterEntry:
    """``GET`` the letter (no ``action``) or ``POST`` its ``action`` (redrive, purge)."""
    consumer = await _group_of(settings, letter_id, group)
    path = _letter_path(consumer.group, letter_id, action)
    async with operator_port(settings, consumer.service) as port:
        try:
            answer = await (port.post(path) if action else port.get(path))
        except NotFoundThere as missing:
            raise NoSuchDeadLetter(
                f"no dead letter {letter_id!r} in group {consumer.group}"
            ) from missing
    return DeadLetterEntry.of(consumer.service, answer)


async def show_dead_letter(
    settings: OpsSettings, letter_id: str, *, group: str | None = None
) -> DeadLetterEntry:
    """The dead letter ``letter_id`` (of ``group``, or of whichever group has it)."""
    return await _one(settings, letter_id, group)


async def redrive_dead_letter(
    settings: OpsSettings, letter_id: str, *, group: str | None = None
) -> DeadLetterEntry:
    """Give the dead letter ``letter_id`` back to the consumer that failed it; what it was.
    A letter kept truncated is refused (the worker's 409)."""
    return await _one(settings, letter_id, group, "redrive")


async def purge_dead_letter(
    settings: OpsSettings, letter_id: str, *, group: str | None = None
) -> DeadLetterEntry:
    """Remove the dead letter ``letter_id`` for good; what it was."""
    return await _one(settings, letter_id, group, "purge")


async def redrive_dead_letters(
    settings: OpsSettings, query: DeadLetterQuery | None = None, *, per_second: float = 10.0
) -> list[GroupCount]:
    """Give every matching dead letter back to the consumer that failed it, at most
    ``per_second`` a second overall (the groups one after the other); how many went back,
    per group. Letters kept truncated are left where they are (purge them).

    One request to the group's worker per letter (each a move on its transport), where SQS
    used to move a whole group in one task: the rate bounds what the workers and the
    consumers are asked, and a letter another operator redrove or purged meanwhile is
    skipped, not an error."""
    if per_second <= 0:
        raise OpsError("the redrive rate must be positive")
    query = query or DeadLetterQuery()
    counts = []
    first = True
    for consumer in _chosen(query):
        moved = 0
        async with operator_port(settings, consumer.service) as port:
            for letter in await _matching(port, consumer, query):
                if letter.truncated:
                    continue
                if not first:
                    await asyncio.sleep(1 / per_second)
                first = False
                try:
                    await port.post(_letter_path(consumer.group, letter.id, "redrive"))
                except NotFoundThere:
                    continue
                moved += 1
        counts.append(GroupCount(consumer.service, consumer.group, moved))
    return counts


async def purge_dead_letters(
    settings: OpsSettings, query: DeadLetterQuery | None = None
) -> list[GroupCount]:
    """Remove every matching dead letter for good; how many, per group (one request to
    the group's worker per letter)."""
    query = query or DeadLetterQuery()
    counts = []
    for consumer in _chosen(query):
        purged = 0
        async with operator_port(settings, consumer.service) as port:
            for letter in await _matching(port, consumer, query):
                try:
                    await port.post(_letter_path(consumer.group, letter.id, "purge"))
                except NotFoundThere:
                    continue
                purged += 1
        counts.append(GroupCount(consumer.service, consumer.group, purged))
    return counts


def count(counts: Sequence[GroupCount]) -> int:
    return sum(c.count for c in counts)
