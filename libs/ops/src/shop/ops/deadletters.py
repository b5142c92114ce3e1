"""Dead letters across every consumer group of the shop, on the configured transport:
list them (filtered), show one, redrive one or all that match (at a bounded rate), purge
those that match. Each group's letters are handled by
:class:`shop.messaging.DeadLetters` over the transport's own dead-letter store, so a
redrive goes back to the consumer that failed, and to it alone."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from shop.messaging import DeadLetterFilter, DeadLetters, StoredDeadLetter
from shop.messaging.deadletters import redrive_each
from shop.messaging.errors import MessagingError
from shop.messaging.transports import Transport
from shop.ops.bus import started_transport
from shop.ops.errors import OpsError
from shop.ops.services import ConsumerGroupOf, consumer_groups
from shop.ops.settings import OpsSettings


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
    """Text (any case) in the error message, the key or the body."""

    def takes(self, consumer: ConsumerGroupOf) -> bool:
        return (self.service is None or consumer.service == self.service) and (
            self.group is None or consumer.group == self.group
        )

    @property
    def letter_filter(self) -> DeadLetterFilter:
        """What :class:`DeadLetterFilter` can say of this query (the rest is ``contains``)."""
        return DeadLetterFilter(message_type=self.message_type, error_type=self.error_type)

    def matches(self, letter: StoredDeadLetter) -> bool:
        if not self.letter_filter.matches(letter):
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

    @property
    def is_everything(self) -> bool:
        return self.message_type is None and self.error_type is None and self.contains is None


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
    def of(cls, service: str, letter: StoredDeadLetter) -> DeadLetterEntry:
        return cls(
            id=letter.id,
            service=service,
            group=letter.group,
            source=letter.source,
            message_type=letter.message_type,
            key=letter.key,
            error_type=letter.error_type,
            error_message=letter.error_message,
            attempts=letter.attempts,
            first_failure_at=letter.first_failure_at,
            last_failure_at=letter.last_failure_at,
            truncated=letter.truncated,
            body=letter.body,
            headers=dict(letter.headers),
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


def _letters_of(transport: Transport, group: str) -> DeadLetters:
    return DeadLetters(transport.dead_letter_store, group)


async def _matching(
    transport: Transport, consumer: ConsumerGroupOf, query: DeadLetterQuery
) -> list[StoredDeadLetter]:
    letters = _letters_of(transport, consumer.group)
    try:
        found = await letters.list(query.letter_filter)
    except MessagingError as error:
        if "does not exist" in str(error):
            return []  # its queues were never declared: its worker has not run yet
        raise
    return [letter for letter in found if query.matches(letter)]


async def list_dead_letters(
    settings: OpsSettings, query: DeadLetterQuery | None = None
) -> list[DeadLetterEntry]:
    """Every matching dead letter, by service and group, oldest first within a group."""
    query = query or DeadLetterQuery()
    entries: list[DeadLetterEntry] = []
    async with started_transport(settings.messaging) as transport:
        for consumer in _chosen(query):
            letters = await _matching(transport, consumer, query)
            entries += [DeadLetterEntry.of(consumer.service, letter) for letter in letters]
    return entries


async def _find(
    transport: Transport, letter_id: str, group: str | None
) -> tuple[ConsumerGroupOf, StoredDeadLetter]:
    found = [
        (consumer, letter)
        for consumer in _chosen(DeadLetterQuery(group=group))
        for letter in await _matching(transport, consumer, DeadLetterQuery())
        if letter.id == letter_id
    ]
    if not found:
        where = f"group {group}" if group else "any consumer group"
        raise OpsError(f"no dead letter {letter_id!r} in {where}")
    if len(found) > 1:
        groups = ", ".join(consumer.group for consumer, _ in found)
        raise OpsError(f"dead letter {letter_id!r} is in several groups ({groups}): name one")
    return found[0]


async def show_dead_letter(
    settings: OpsSettings, letter_id: str, *, group: str | None = None
) -> DeadLetterEntry:
    """The dead letter ``letter_id`` (of ``group``, or of whichever group has it)."""
    async with started_transport(settings.messaging) as transport:
        consumer, letter = await _find(transport, letter_id, group)
    return DeadLetterEntry.of(consumer.service, letter)


async def redrive_dead_letter(
    settings: OpsSettings, letter_id: str, *, group: str | None = None
) -> DeadLetterEntry:
    """Give the dead letter ``letter_id`` back to the consumer that failed it; what it was."""
    async with started_transport(settings.messaging) as transport:
        if group is None:
            consumer, _ = await _find(transport, letter_id, group)
        else:
            (consumer,) = _chosen(DeadLetterQuery(group=group))
        try:
            redriven = await _letters_of(transport, consumer.group).redrive_one(letter_id)
        except (KeyError, ValueError) as error:
            raise OpsError(str(error).strip("'\"")) from error
    return DeadLetterEntry.of(consumer.service, redriven)


async def redrive_dead_letters(
    settings: OpsSettings, query: DeadLetterQuery | None = None, *, per_second: float = 10.0
) -> list[GroupCount]:
    """Give every matching dead letter back to the consumer that failed it, at most
    ``per_second`` a second overall (the groups one after the other); how many went back,
    per group. Letters kept truncated are left where they are (purge them)."""
    if per_second <= 0:
        raise OpsError("the redrive rate must be positive")
    query = query or DeadLetterQuery()
    counts = []
    async with started_transport(settings.messaging) as transport:
        for consumer in _chosen(query):
            letters = _letters_of(transport, consumer.group)
            matching = await _matching(transport, consumer, query)
            if not matching:
                moved = 0
            elif query.is_everything:
                # All of them: the transport's bulk move where it has one (SQS's).
                moved = await letters.redrive(per_second=per_second)
            else:
                moved = await redrive_each(letters.store, consumer.group, matching, per_second)
            counts.append(GroupCount(consumer.service, consumer.group, moved))
    return counts


async def purge_dead_letters(
    settings: OpsSettings, query: DeadLetterQuery | None = None
) -> list[GroupCount]:
    """Remove every matching dead letter for good; how many, per group."""
    query = query or DeadLetterQuery()
    counts = []
    async with started_transport(settings.messaging) as transport:
        for consumer in _chosen(query):
            matching = await _matching(transport, consumer, query)
            if matching:
                await transport.dead_letter_store.purge(consumer.group, matching)
            counts.append(GroupCount(consumer.service, consumer.group, len(matching)))
    return counts


def count(counts: Sequence[GroupCount]) -> int:
    return sum(c.count for c in counts)
