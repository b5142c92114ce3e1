"""Dead letters across every consumer group of the shop, asked of the worker that runs
each group (``/internal/v1/dead-letters`` on its operator port, with the operator token):
list them a page at a time (filtered), show one, redrive one or all that match (at a
bounded rate), purge those that match (deleted from the service's store, body and all,
naming each letter deleted). A worker serves its own groups' letters from its service's
database, and a redrive goes back to the consumer that failed, and to it alone; this
library never reaches the bus for them."""

from __future__ import annotations

import asyncio
import base64
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Final

from shop.ops.errors import OpsError
from shop.ops.internal import NotFoundThere, OperatorPort, operator_port, quoted
from shop.ops.services import ConsumerGroupOf, consumer_groups
from shop.ops.settings import OpsSettings

DEAD_LETTERS_PATH = "/internal/v1/dead-letters"
PAGE: Final = 50
"""Dead letters a page holds unless asked otherwise."""
MAX_PAGE: Final = 200
"""The most a worker answers in one page (``shop.messaging.deadletters.MAX_PAGE``)."""


class NoSuchDeadLetter(OpsError):
    """The group's worker holds no dead letter by that id (redriven or purged already?)."""


@dataclass(frozen=True, slots=True)
class DeadLetterEntry:
    """One dead letter, with the consumer group and the service it belongs to."""

    id: str
    """Unique within its group (the id its service's store gave it)."""
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
    problems: tuple[str, ...] = ()
    """What could not be read of its dead-letter keys: shown as bad, beside the others."""
    stored_at: datetime | None = None
    """When its service's store took it in (its retention counts from there)."""
    kept_body_size: int | None = None
    """Set on a letter of a listing whose body is long: ``body`` is then its first bytes
    only, and this the whole body's size (:func:`show_dead_letter` gives all of it)."""

    @property
    def malformed(self) -> bool:
        return bool(self.problems)

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
            problems=tuple(str(p) for p in document.get("problems", ())),
            kept_body_size=document.get("kept_body_size"),
            stored_at=(
                datetime.fromisoformat(document["stored_at"]) if document.get("stored_at") else None
            ),
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
    type, error type and time; this is looked for here, in each page they answered."""
    since: datetime | None = None
    """Last failed at or after this."""
    until: datetime | None = None
    """Last failed before this."""

    def takes(self, consumer: ConsumerGroupOf) -> bool:
        return (self.service is None or consumer.service == self.service) and (
            self.group is None or consumer.group == self.group
        )

    @property
    def params(self) -> dict[str, str]:
        """What a worker's ``GET /internal/v1/dead-letters`` filters by itself."""
        asked = {
            "message_type": self.message_type,
            "error_type": self.error_type,
            "since": None if self.since is None else self.since.isoformat(),
            "until": None if self.until is None else self.until.isoformat(),
        }
        return {name: value for name, value in asked.items() if value is not None}

    def matches(self, letter: DeadLetterEntry) -> bool:
        if self.message_type is not None and letter.message_type != self.message_type:
            return False
        if self.error_type is not None and letter.error_type != self.error_type:
            return False
        if self.since is not None and letter.last_failure_at < self.since:
            return False
        if self.until is not None and letter.last_failure_at >= self.until:
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
    """How many dead letters of one group an operation moved or removed (and, for a
    purge, the id of each one deleted)."""

    service: str
    group: str
    count: int
    ids: tuple[str, ...] = field(default=(), compare=False)


@dataclass(frozen=True, slots=True)
class Purged:
    """What a purge of one letter deleted from its service's store."""

    service: str
    group: str
    ids: tuple[str, ...]

    @property
    def count(self) -> int:
        return len(self.ids)


@dataclass(frozen=True, slots=True)
class DeadLetterPage:
    """One page of dead letters, and where the next begins (None: this was the last)."""

    letters: list[DeadLetterEntry]
    next_cursor: str | None


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


def _cursor(group: str, after: str | None) -> str:
    return f"{group}/{after or ''}"


def _from_cursor(
    cursor: str | None, consumers: Sequence[ConsumerGroupOf]
) -> tuple[int, str | None]:
    """Which of ``consumers`` a cursor points into, and after which letter of it."""
    if not cursor:
        return 0, None
    group, _, after = cursor.partition("/")
    for index, consumer in enumerate(consumers):
        if consumer.group == group:
            return index, after or None
    raise OpsError(f"the cursor {cursor!r} names no group this query reads")


@dataclass(frozen=True, slots=True)
class _GroupPage:
    letters: list[DeadLetterEntry]
    next_after: str | None
    """The cursor of the group's next page there; None on its last."""
    newest: str | None
    """The id of the group's letter kept last when the page was read (None without any)."""


async def _group_page(
    port: OperatorPort,
    consumer: ConsumerGroupOf,
    query: DeadLetterQuery,
    after: str | None,
    limit: int,
    *,
    kept_through: str | None = None,
) -> _GroupPage:
    """One page of the group's worker (filtered there by type, error type and time, and
    to the letters kept through ``kept_through``; here by text)."""
    params = {"group": consumer.group, "limit": str(limit), **query.params}
    if after is not None:
        params["after"] = after
    if kept_through is not None:
        params["kept_through"] = kept_through
    answer = await port.get(DEAD_LETTERS_PATH, params)
    letters = [DeadLetterEntry.of(consumer.service, one) for one in answer["dead_letters"]]
    return _GroupPage(
        [x for x in letters if query.matches(x)], answer.get("next_after"), answer.get("newest")
    )


async def _pages_as_found_now(
    port: OperatorPort, consumer: ConsumerGroupOf, query: DeadLetterQuery
) -> AsyncIterator[list[DeadLetterEntry]]:
    """The group's matching letters, a page at a time, as they were kept when the first
    page was read: a letter taken in meanwhile (a redriven one dead again) is not among
    them, so that a task over all of them ends."""
    page = await _group_page(port, consumer, query, None, MAX_PAGE)
    bound = page.newest
    while True:
        yield page.letters
        if page.next_after is None or bound is None:
            return
        page = await _group_page(
            port, consumer, query, page.next_after, MAX_PAGE, kept_through=bound
        )


async def page_dead_letters(
    settings: OpsSettings,
    query: DeadLetterQuery | None = None,
    *,
    cursor: str | None = None,
    limit: int = PAGE,
) -> DeadLetterPage:
    """At most ``limit`` matching dead letters, group after group, oldest first within a
    group, from ``cursor`` (a page's ``next_cursor``; the first page without). Each worker
    answers at most ``limit`` at a time, so that no page reads more than that."""
    if not 1 <= limit <= MAX_PAGE:
        raise OpsError(f"a page holds between 1 and {MAX_PAGE} dead letters")
    query = query or DeadLetterQuery()
    consumers = _chosen(query)
    index, after = _from_cursor(cursor, consumers)
    letters: list[DeadLetterEntry] = []
    while index < len(consumers):
        consumer = consumers[index]
        async with operator_port(settings, consumer.service) as port:
            page = await _group_page(port, consumer, query, after, limit - len(letters))
        letters += page.letters
        if page.next_after is not None:
            after = page.next_after
        else:
            index, after = index + 1, None
        if len(letters) >= limit:
            break
    more = index < len(consumers)
    return DeadLetterPage(letters, _cursor(consumers[index].group, after) if more else None)


async def _each_page(
    settings: OpsSettings, query: DeadLetterQuery
) -> AsyncIterator[list[DeadLetterEntry]]:
    cursor: str | None = None
    while True:
        page = await page_dead_letters(settings, query, cursor=cursor, limit=MAX_PAGE)
        yield page.letters
        if page.next_cursor is None:
            return
        cursor = page.next_cursor


async def list_dead_letters(
    settings: OpsSettings, query: DeadLetterQuery | None = None
) -> list[DeadLetterEntry]:
    """Every matching dead letter, by service and group, oldest first within a group,
    read a page at a time (for a few: a tool that shows them pages with
    :func:`page_dead_letters`)."""
    return [
        letter async for page in _each_page(settings, query or DeadLetterQuery()) for letter in page
    ]


async def _group_of(settings: OpsSettings, letter_id: str, group: str | None) -> ConsumerGroupOf:
    """``group``'s consumer, or (None) that of the one group that holds ``letter_id``
    (each group's worker is asked for that one letter)."""
    if group is not None:
        (consumer,) = _chosen(DeadLetterQuery(group=group))
        return consumer
    holders = []
    for consumer in _chosen(DeadLetterQuery()):
        async with operator_port(settings, consumer.service) as port:
            try:
                await port.get(_letter_path(consumer.group, letter_id))
            except NotFoundThere:
                continue
        holders.append(consumer)
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
) -> Purged:
    """Delete the dead letter ``letter_id`` from its service's store, body and all; what
    the worker says it deleted."""
    consumer = await _group_of(settings, letter_id, group)
    async with operator_port(settings, consumer.service) as port:
        try:
            answer = await port.post(_letter_path(consumer.group, letter_id, "purge"))
        except NotFoundThere as missing:
            raise NoSuchDeadLetter(
                f"no dead letter {letter_id!r} in group {consumer.group}"
            ) from missing
    return Purged(consumer.service, consumer.group, tuple(str(x) for x in answer["purged"]))


async def redrive_dead_letters(
    settings: OpsSettings, query: DeadLetterQuery | None = None, *, per_second: float = 10.0
) -> list[GroupCount]:
    """Give every matching dead letter back to the consumer that failed it, at most
    ``per_second`` a second overall (the groups one after the other); how many went back,
    per group. Letters kept truncated are left where they are (purge them).

    One request to the group's worker per letter, read a page at a time: the rate bounds
    what the workers and the consumers are asked, and a letter another operator redrove
    or purged meanwhile is skipped, not an error."""
    if per_second <= 0:
        raise OpsError("the redrive rate must be positive")
    query = query or DeadLetterQuery()
    counts = []
    first = True
    for consumer in _chosen(query):
        moved = 0
        async with operator_port(settings, consumer.service) as port:
            async for letters in _pages_as_found_now(port, consumer, query):
                for letter in letters:
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
    """Delete every matching dead letter from its service's store, body and all; how many,
    and which, per group. The workers delete what matches their own filters a page at a
    time; a text to look for (``contains``) is matched here, page by page, and each letter
    that matches purged by its id."""
    query = query or DeadLetterQuery()
    counts = []
    for consumer in _chosen(query):
        async with operator_port(settings, consumer.service) as port:
            if query.contains is None:
                purged = await _purge_matching_there(port, consumer, query)
            else:
                purged = await _purge_matching_here(port, consumer, query)
        counts.append(GroupCount(consumer.service, consumer.group, len(purged), tuple(purged)))
    return counts


async def _purge_matching_there(
    port: OperatorPort, consumer: ConsumerGroupOf, query: DeadLetterQuery
) -> list[str]:
    purged: list[str] = []
    path = f"{DEAD_LETTERS_PATH}/{quoted(consumer.group)}/purge"
    params = {"limit": str(MAX_PAGE), **query.params}
    while True:
        answer = await port.post(path, params)
        purged += [str(x) for x in answer["purged"]]
        if int(answer["count"]) == 0 or answer.get("kept_through") is None:
            return purged
        # Only what was kept when the purge began: what arrives meanwhile no one saw.
        params["kept_through"] = str(answer["kept_through"])


async def _purge_matching_here(
    port: OperatorPort, consumer: ConsumerGroupOf, query: DeadLetterQuery
) -> list[str]:
    purged: list[str] = []
    async for letters in _pages_as_found_now(port, consumer, query):
        for letter in letters:
            try:
                answer = await port.post(_letter_path(consumer.group, letter.id, "purge"))
            except NotFoundThere:
                continue
            purged += [str(x) for x in answer["purged"]]
    return purged


def count(counts: Sequence[GroupCount]) -> int:
    return sum(c.count for c in counts)
