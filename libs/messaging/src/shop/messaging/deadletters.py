"""Dead letters, the same on every transport: the original message byte for byte, and why.

The broker only carries a dead letter (a consumer writes it to its dead-letter topic or
queue before it acknowledges the message, and SQS moves there what its redrive policy
gives up on); the worker collects it from there into the service's own database, which
keeps it (:class:`DeadLetterStore`; :mod:`shop.messaging.deadletter_table`). Listing is
paged there, a purge deletes the row, and a redrive hands the message back to the
consumer that failed it through its transport (:class:`DeadLetterCourier`) before the row
goes. :class:`DeadLetters` is the API people and tools use.
"""

from __future__ import annotations

import asyncio
import builtins
import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
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
MAX_PAGE: Final = 200
"""Most dead letters one page holds."""
LISTED_BODY_BYTES: Final = 16 * 1024
"""How much of each body a page holds: enough to recognise a message and find text in it,
so that a page of letters of up to a broker's 1 MiB each stays a few MiB (an operator
tool's memory, its timeout); :meth:`DeadLetters.show` gives the whole body."""


@dataclass(frozen=True, slots=True)
class StoredDeadLetter:
    id: str
    """Unique within its consumer's dead letters (the store's own id once kept)."""
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
    transport_id: str = ""
    """Its id on the broker that carried it (Kafka ``partition-offset-timestamp``, SQS
    message id): collecting it twice keeps it once."""
    problems: tuple[str, ...] = ()
    """What could not be read of its dead-letter keys (each a sentence): the letter is kept
    and shown all the same, with a stand-in for each field that was wrong."""
    stored_at: datetime | None = None
    """When the store took it in; its retention counts from here."""
    kept_body_size: int | None = None
    """Set on a letter of a page whose body is longer than :data:`LISTED_BODY_BYTES`:
    ``body`` is then only its first bytes, and this the size of the body kept."""

    @property
    def truncated(self) -> bool:
        """Only a prefix of the body was kept: redriving it cannot succeed."""
        return self.whole_body_size is not None

    @property
    def malformed(self) -> bool:
        return bool(self.problems)

    @property
    def body_cut_for_listing(self) -> bool:
        return self.kept_body_size is not None


@dataclass(frozen=True, slots=True)
class DeadLetterFilter:
    """All fields optional; a dead letter matches when it matches every field given."""

    message_type: str | None = None
    error_type: str | None = None
    error_contains: str | None = None
    """Text (any case) in the error message."""
    since: datetime | None = None
    """Last failed at or after this."""
    until: datetime | None = None
    """Last failed before this."""
    kept_through: str | None = None
    """Kept no later than the letter of this id: what a redrive or purge of many found when
    it began, not the letters taken in meanwhile (a redriven one dead again among them,
    which a redrive of all would otherwise send round for ever)."""

    def matches(self, letter: StoredDeadLetter) -> bool:
        return (
            (
                self.kept_through is None
                or (letter_key(letter.id) or 0) <= (letter_key(self.kept_through) or 0)
            )
            and (self.message_type is None or letter.message_type == self.message_type)
            and (self.error_type is None or letter.error_type == self.error_type)
            and (
                self.error_contains is None
                or self.error_contains.lower() in letter.error_message.lower()
            )
            and (self.since is None or letter.last_failure_at >= self.since)
            and (self.until is None or letter.last_failure_at < self.until)
        )


def letter_key(letter_id: str | None) -> int | None:
    """A letter id as the store's number (the order letters were kept in); None for what
    cannot be one."""
    if letter_id is None or not letter_id.isdigit() or len(letter_id) > 18:
        return None
    return int(letter_id)


@dataclass(frozen=True, slots=True)
class DeadLetterPage:
    letters: list[StoredDeadLetter]
    next_after: str | None
    """The cursor of the next page (the last letter's id), None on the last page."""


@dataclass(frozen=True, slots=True)
class GroupSummary:
    """How many dead letters one consumer has, and since when the oldest waits."""

    group: str
    count: int
    oldest_stored_at: datetime | None


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
    """Rebuild a dead letter from what a transport carried (``dead_letter_headers``).

    Never raises: a key that cannot be read (``x-dead-letter-attempts: x``, a time without
    a zone) gets a stand-in and a sentence in ``problems``, so that one bad letter is shown
    as bad and never hides the others."""
    problems: list[str] = []
    now = datetime.now(UTC)
    return StoredDeadLetter(
        id=letter_id,
        group=stored.get(h.DEAD_LETTER_CONSUMER, ""),
        source=stored.get(h.DEAD_LETTER_SOURCE, ""),
        message_type=stored.get(h.MESSAGE_TYPE),
        body=body,
        headers=h.original_headers(dict(stored)),
        error_type=stored.get(h.DEAD_LETTER_ERROR_TYPE) or _missing(problems, "error type"),
        error_message=stored.get(h.DEAD_LETTER_ERROR_MESSAGE, ""),
        attempts=_whole(stored, h.DEAD_LETTER_ATTEMPTS, problems, most=_MOST_ATTEMPTS) or 0,
        first_failure_at=_moment(stored, h.DEAD_LETTER_FIRST_FAILURE_AT, problems) or now,
        last_failure_at=_moment(stored, h.DEAD_LETTER_LAST_FAILURE_AT, problems) or now,
        key=key,
        whole_body_size=_whole(
            stored, h.DEAD_LETTER_BODY_SIZE, problems, most=_LARGEST_SIZE, optional=True
        ),
        transport_id=letter_id,
        problems=tuple(problems),
    )


def _missing(problems: list[str], what: str) -> str:
    problems.append(f"no {what} was recorded")
    return "unknown"


# The largest numbers the store's columns hold (an attempt count, a body's size): a
# foreign header past them would fail the whole batch it came in, again at every look.
_MOST_ATTEMPTS: Final = 2**31 - 1
_LARGEST_SIZE: Final = 2**63 - 1


def _whole(
    stored: Mapping[str, str],
    name: str,
    problems: list[str],
    *,
    most: int,
    optional: bool = False,
) -> int | None:
    value = stored.get(name)
    if value is None:
        if not optional:
            problems.append(f"{name} is missing")
        return None
    try:
        number = int(value)
    except ValueError:
        problems.append(f"{name}={value[:100]!r} is not a whole number")
        return None
    if number < 0:
        problems.append(f"{name}={number} is negative")
        return None
    if number > most:
        problems.append(f"{name}={value[:100]} is out of range")
        return None
    return number


def _moment(stored: Mapping[str, str], name: str, problems: list[str]) -> datetime | None:
    value = stored.get(name)
    if value is None:
        problems.append(f"{name} is missing")
        return None
    try:
        at = datetime.fromisoformat(value)
    except ValueError:
        problems.append(f"{name}={value[:100]!r} is not an ISO 8601 time")
        return None
    if at.tzinfo is None:
        problems.append(f"{name}={value[:100]!r} has no time zone")
        return None
    return at


class DeadLetterStore(Protocol):
    """Where a service keeps its consumers' dead letters (its database), each consumer's
    apart (``group``), in the order they were taken in."""

    async def keep(self, letters: Sequence[StoredDeadLetter]) -> int:
        """Take these letters in (one collected twice is kept once, by its group and
        ``transport_id``); how many were new."""
        ...

    async def page(
        self, group: str, where: DeadLetterFilter, *, after: str | None, limit: int
    ) -> DeadLetterPage:
        """At most ``limit`` matching letters of ``group`` kept after the letter ``after``
        (from the first without), oldest first; each body cut to :data:`LISTED_BODY_BYTES`
        (``kept_body_size`` says so)."""
        ...

    async def get(self, group: str, letter_id: str) -> StoredDeadLetter | None: ...

    async def remove(self, group: str, letter_ids: Sequence[str]) -> list[str]:
        """Delete these letters, bodies and all; the ids of those that were there."""
        ...

    async def summary(self, groups: Sequence[str]) -> list[GroupSummary]:
        """How many letters each of ``groups`` has, and when the oldest was taken in."""
        ...

    async def newest(self, group: str) -> str | None:
        """The id of the letter of ``group`` kept last; None when it has none."""
        ...

    async def delete_stored_before(self, cutoff: datetime, limit: int) -> int:
        """Retention: delete at most ``limit`` letters taken in before ``cutoff``, the
        oldest first; how many."""
        ...


@dataclass(frozen=True, slots=True)
class Arrival:
    """A dead letter a courier fetched from the broker, not yet taken off it."""

    letter: StoredDeadLetter
    handle: object = field(compare=False)
    """What the courier needs to take it off the broker (an offset, a receipt handle)."""


class DeadLetterCourier(Protocol):
    """A transport's side of dead letters: it carries them from the consumers to the
    store and back to the consumer that failed them."""

    async def fetch(self, group: str, limit: int) -> list[Arrival]:
        """Up to ``limit`` dead letters of ``group`` waiting on the broker (few or none
        after a short wait when there are none)."""
        ...

    async def fetched(self, group: str, arrivals: Sequence[Arrival]) -> None:
        """These are kept now: take them off the broker (or past them)."""
        ...

    async def unfetched(self, group: str, arrivals: Sequence[Arrival]) -> None:
        """These could not be kept: fetch them again."""
        ...

    async def redeliver(self, group: str, letter: StoredDeadLetter) -> None:
        """Give ``letter`` back to ``group`` alone, as on its first try."""
        ...


class DeadLetters:
    """List, show, redrive and purge the dead letters of one consumer (``group``)."""

    def __init__(self, store: DeadLetterStore, courier: DeadLetterCourier, group: str) -> None:
        self.store = store
        self.courier = courier
        self.group = group

    async def page(
        self,
        where: DeadLetterFilter | None = None,
        *,
        after: str | None = None,
        limit: int = MAX_PAGE,
    ) -> DeadLetterPage:
        if not 1 <= limit <= MAX_PAGE:
            raise ValueError(f"a page holds between 1 and {MAX_PAGE} dead letters")
        return await self.store.page(
            self.group, where or DeadLetterFilter(), after=after, limit=limit
        )

    async def list(self, where: DeadLetterFilter | None = None) -> list[StoredDeadLetter]:
        """Every matching letter with its whole body, read a page at a time (for a few,
        in tests and scripts; a tool pages with :meth:`page`)."""
        letters: list[StoredDeadLetter] = []
        after: str | None = None
        while True:
            page = await self.page(where, after=after)
            for letter in page.letters:
                whole = await self._whole(letter)
                if whole is not None:  # unless redriven or purged meanwhile
                    letters.append(whole)
            if page.next_after is None:
                return letters
            after = page.next_after

    async def show(self, letter_id: str) -> StoredDeadLetter:
        letter = await self.store.get(self.group, letter_id)
        if letter is None:
            raise KeyError(f"{self.group} has no dead letter {letter_id!r}")
        return letter

    async def redrive_one(self, letter_id: str) -> StoredDeadLetter:
        """Send the letter back to this consumer alone, then delete it here: a crash in
        between leaves it in both places (delivery is at least once), never in neither."""
        letter = await self.show(letter_id)
        if letter.truncated:
            raise ValueError(
                f"dead letter {letter_id!r} of {self.group} was kept truncated "
                f"({letter.whole_body_size} bytes, too large for the broker): it cannot be "
                "redriven; purge it once dealt with"
            )
        await self.courier.redeliver(self.group, letter)
        await self.store.remove(self.group, [letter.id])
        return letter

    async def redrive(
        self, where: DeadLetterFilter | None = None, *, per_second: float = 10.0
    ) -> int:
        """Redrive every matching dead letter (all of them without a filter) one by one,
        at most ``per_second`` a second, so as not to flood the consumer or what it calls;
        how many went back. Letters kept truncated stay (purge them)."""
        if per_second <= 0:
            raise ValueError("per_second must be positive")
        where = await self.as_found_now(where)
        if where is None:
            return 0
        moved = 0
        after: str | None = None
        while True:
            page = await self.page(where, after=after)
            for letter in page.letters:
                if letter.truncated:
                    log.warning(
                        "a dead letter kept truncated is not redriven; purge it once dealt with",
                        group=self.group,
                        letter=letter.id,
                    )
                    continue
                whole = await self._whole(letter)
                if whole is None:
                    continue  # redriven or purged meanwhile
                if moved:
                    await asyncio.sleep(1 / per_second)
                await self.courier.redeliver(self.group, whole)
                await self.store.remove(self.group, [letter.id])
                moved += 1
            if page.next_after is None:
                return moved
            after = page.next_after

    async def _whole(self, letter: StoredDeadLetter) -> StoredDeadLetter | None:
        """The letter with its whole body (a page cuts long ones)."""
        if not letter.body_cut_for_listing:
            return letter
        return await self.store.get(self.group, letter.id)

    async def as_found_now(self, where: DeadLetterFilter | None) -> DeadLetterFilter | None:
        """``where``, bounded to the letters kept now (and to its own ``kept_through``, a
        task's that began earlier); None when there are none."""
        newest = letter_key(await self.store.newest(self.group))
        if newest is None:
            return None
        where = where or DeadLetterFilter()
        bound = letter_key(where.kept_through)
        return replace(where, kept_through=str(newest if bound is None else min(bound, newest)))

    async def purge(self, where: DeadLetterFilter | None = None) -> int:
        """Delete every matching dead letter, a page at a time; how many."""
        return len(await self.purge_ids(where))

    async def purge_ids(
        self, where: DeadLetterFilter | None = None, *, most: int | None = None
    ) -> builtins.list[str]:
        """Delete matching dead letters (at most ``most``), a page at a time; their ids.
        Only those kept when it began: one taken in meanwhile was seen by no one."""
        where = await self.as_found_now(where)
        if where is None:
            return []
        removed: builtins.list[str] = []
        while most is None or len(removed) < most:
            limit = MAX_PAGE if most is None else min(MAX_PAGE, most - len(removed))
            # Each page starts from the first: the letters of the last are gone.
            page = await self.page(where, limit=limit)
            if not page.letters:
                break
            removed += await self.store.remove(self.group, [x.id for x in page.letters])
            if page.next_after is None:
                break
        return removed
