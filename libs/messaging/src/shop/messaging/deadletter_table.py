"""Where a service keeps its dead letters: the ``dead_letters`` table of its own database
(:class:`PostgresDeadLetterStore`), or a process's memory for a worker without a database
(:class:`MemoryDeadLetterStore`, the same semantics, for tests).

Reads are paged along the index of a consumer's letters (``consumer, id``): a page is one
bounded statement, however many letters are kept."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any, Final

from sqlalchemy import ColumnElement, and_, delete, func, select, update
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from shop.messaging.deadletters import (
    LISTED_BODY_BYTES,
    DeadLetterFilter,
    DeadLetterPage,
    GroupSummary,
    StoredDeadLetter,
    letter_key,
)
from shop.messaging.privacy import forgotten_in_message, names_address
from shop.messaging.schema import dead_letters

ERASED_FOR_PRIVACY: Final = "its body was erased when its customer was forgotten"
"""The problem a letter is left with when its body named a forgotten customer and could
not be rewritten (kept truncated, or not a contract): its body is gone, and it is kept as
truncated, so that no redrive sends what is left."""


def _text(text: str) -> str:
    # Postgres' text and JSON cannot hold NUL, which a foreign producer's header (or an
    # error quoting a body) may carry.
    return text.replace("\x00", "\ufffd")


def _text_or_none(text: str | None) -> str | None:
    return None if text is None else _text(text)


def _row(letter: StoredDeadLetter) -> dict[str, Any]:
    return {
        "consumer": letter.group,
        "transport_id": _text(letter.transport_id[:200]),
        "source": _text(letter.source),
        "message_type": _text_or_none(letter.message_type),
        "key": _text_or_none(letter.key),
        "error_type": _text(letter.error_type),
        "error_message": _text(letter.error_message),
        "attempts": letter.attempts,
        "first_failure_at": letter.first_failure_at,
        "last_failure_at": letter.last_failure_at,
        "whole_body_size": letter.whole_body_size,
        "headers": {_text(k): _text(v) for k, v in letter.headers.items()},
        "body": letter.body,
        "problems": [_text(problem) for problem in letter.problems],
    }


def _letter(row: Any, body_size: int | None = None) -> StoredDeadLetter:
    """A row as a letter; ``body_size``: the whole body's size, when the row's body is
    only its first :data:`LISTED_BODY_BYTES` (a page's)."""
    return StoredDeadLetter(
        id=str(row.id),
        group=row.consumer,
        source=row.source,
        message_type=row.message_type,
        body=bytes(row.body),
        headers=dict(row.headers),
        error_type=row.error_type,
        error_message=row.error_message,
        attempts=row.attempts,
        first_failure_at=row.first_failure_at,
        last_failure_at=row.last_failure_at,
        key=row.key,
        whole_body_size=row.whole_body_size,
        transport_id=row.transport_id,
        problems=tuple(row.problems),
        stored_at=row.stored_at,
        kept_body_size=body_size if body_size and body_size > LISTED_BODY_BYTES else None,
    )


# A page's columns: every one, but only the first bytes of the body, and its whole size.
_LISTED = [
    *(column for column in dead_letters.c if column.name != "body"),
    func.substring(dead_letters.c.body, 1, LISTED_BODY_BYTES).label("body"),
    func.octet_length(dead_letters.c.body).label("body_size"),
]


def _conditions(where: DeadLetterFilter) -> list[ColumnElement[bool]]:
    conditions: list[ColumnElement[bool]] = []
    if where.message_type is not None:
        conditions.append(dead_letters.c.message_type == where.message_type)
    if where.error_type is not None:
        conditions.append(dead_letters.c.error_type == where.error_type)
    if where.error_contains is not None:
        conditions.append(
            func.strpos(func.lower(dead_letters.c.error_message), where.error_contains.lower()) > 0
        )
    if where.since is not None:
        conditions.append(dead_letters.c.last_failure_at >= where.since)
    if where.until is not None:
        conditions.append(dead_letters.c.last_failure_at < where.until)
    if where.kept_through is not None:
        conditions.append(dead_letters.c.id <= (letter_key(where.kept_through) or 0))
    return conditions


async def forget_in_dead_letters(session: AsyncSession, email: str, keys: Sequence[str]) -> int:
    """Forget the customer of ``email`` in the dead letters kept under ``keys`` (their
    orders' ids, the keys their messages carry), in the session's transaction (the caller
    commits); how many letters changed. A letter that is a contract naming them is
    rewritten as the outbox's messages are (:func:`~shop.messaging.privacy.forgotten_in_message`),
    so that it can still be redriven; one that names them otherwise (kept truncated, or not
    a contract) loses its body, and says so. Headers and errors were masked when the letter
    was written (:mod:`shop.messaging.privacy`)."""
    if not keys:
        return 0
    rows = (
        await session.execute(
            select(
                dead_letters.c.id,
                dead_letters.c.body,
                dead_letters.c.problems,
                dead_letters.c.whole_body_size,
            )
            .where(dead_letters.c.key.in_(list(keys)))
            .with_for_update()
        )
    ).all()
    changed = 0
    for row in rows:
        body = forgotten_in_message(bytes(row.body), email)
        if body is not None:
            values: dict[str, Any] = {"body": body}
        elif names_address(bytes(row.body).decode("utf-8", "replace"), email):
            # Kept as cut to nothing: a letter kept truncated is never redriven.
            values = {
                "body": b"",
                "whole_body_size": row.whole_body_size or len(row.body),
                "problems": [*row.problems, ERASED_FOR_PRIVACY],
            }
        else:
            continue
        await session.execute(
            update(dead_letters).where(dead_letters.c.id == row.id).values(values)
        )
        changed += 1
    return changed


class PostgresDeadLetterStore:
    def __init__(self, sessions: async_sessionmaker[AsyncSession]) -> None:
        self._sessions = sessions

    async def keep(self, letters: Sequence[StoredDeadLetter]) -> int:
        if not letters:
            return 0
        statement = (
            insert(dead_letters)
            .values([_row(letter) for letter in letters])
            .on_conflict_do_nothing(constraint="uq_dead_letters_consumer_transport_id")
            .returning(dead_letters.c.id)
        )
        async with self._sessions.begin() as session:
            return len((await session.execute(statement)).all())

    async def page(
        self, group: str, where: DeadLetterFilter, *, after: str | None, limit: int
    ) -> DeadLetterPage:
        conditions = [dead_letters.c.consumer == group, *_conditions(where)]
        if after is not None:
            conditions.append(dead_letters.c.id > (letter_key(after) or 0))
        # One more than asked says whether another page follows.
        statement = (
            select(*_LISTED).where(and_(*conditions)).order_by(dead_letters.c.id).limit(limit + 1)
        )
        async with self._sessions() as session:
            rows = (await session.execute(statement)).all()
        letters = [_letter(row, row.body_size) for row in rows[:limit]]
        more = len(rows) > limit
        return DeadLetterPage(letters, letters[-1].id if more else None)

    async def get(self, group: str, letter_id: str) -> StoredDeadLetter | None:
        key = letter_key(letter_id)
        if key is None:
            return None
        statement = select(dead_letters).where(
            dead_letters.c.consumer == group, dead_letters.c.id == key
        )
        async with self._sessions() as session:
            row = (await session.execute(statement)).one_or_none()
        return None if row is None else _letter(row)

    async def remove(self, group: str, letter_ids: Sequence[str]) -> list[str]:
        keys = [key for key in map(letter_key, letter_ids) if key is not None]
        if not keys:
            return []
        statement = (
            delete(dead_letters)
            .where(dead_letters.c.consumer == group, dead_letters.c.id.in_(keys))
            .returning(dead_letters.c.id)
        )
        async with self._sessions.begin() as session:
            removed = (await session.execute(statement)).scalars().all()
        return [str(key) for key in sorted(removed)]

    async def summary(self, groups: Sequence[str]) -> list[GroupSummary]:
        statement = (
            select(dead_letters.c.consumer, func.count(), func.min(dead_letters.c.stored_at))
            .where(dead_letters.c.consumer.in_(list(groups)))
            .group_by(dead_letters.c.consumer)
        )
        async with self._sessions() as session:
            found = {row[0]: (row[1], row[2]) for row in (await session.execute(statement)).all()}
        return [GroupSummary(group, *found.get(group, (0, None))) for group in groups]

    async def newest(self, group: str) -> str | None:
        statement = select(func.max(dead_letters.c.id)).where(dead_letters.c.consumer == group)
        async with self._sessions() as session:
            found = (await session.execute(statement)).scalar_one_or_none()
        return None if found is None else str(found)

    async def delete_stored_before(self, cutoff: datetime, limit: int) -> int:
        # The oldest first along the index of ages, deleted by primary key.
        statement = delete(dead_letters).where(
            dead_letters.c.id.in_(
                select(dead_letters.c.id)
                .where(dead_letters.c.stored_at < cutoff)
                .order_by(dead_letters.c.stored_at)
                .limit(limit)
                .scalar_subquery()
            )
        )
        async with self._sessions.begin() as session:
            result = await session.execute(statement)
        return int(result.rowcount)  # type: ignore[attr-defined]


class MemoryDeadLetterStore:
    """The table's twin in a process's memory: for workers without a database (tests)."""

    def __init__(self) -> None:
        self._letters: dict[int, StoredDeadLetter] = {}
        self._next = 1

    async def keep(self, letters: Sequence[StoredDeadLetter]) -> int:
        known = {(x.group, x.transport_id) for x in self._letters.values()}
        new = 0
        for letter in letters:
            if (letter.group, letter.transport_id) in known:
                continue
            known.add((letter.group, letter.transport_id))
            self._letters[self._next] = _kept(letter, str(self._next))
            self._next += 1
            new += 1
        return new

    async def page(
        self, group: str, where: DeadLetterFilter, *, after: str | None, limit: int
    ) -> DeadLetterPage:
        start = 0 if after is None else (letter_key(after) or 0)
        matching = [
            letter
            for key, letter in sorted(self._letters.items())
            if key > start and letter.group == group and where.matches(letter)
        ]
        letters = [_listed(letter) for letter in matching[:limit]]
        return DeadLetterPage(letters, letters[-1].id if len(matching) > limit else None)

    async def get(self, group: str, letter_id: str) -> StoredDeadLetter | None:
        letter = self._letters.get(letter_key(letter_id) or 0)
        return letter if letter is not None and letter.group == group else None

    async def remove(self, group: str, letter_ids: Sequence[str]) -> list[str]:
        removed = []
        for key in sorted({k for k in map(letter_key, letter_ids) if k is not None}):
            letter = self._letters.get(key)
            if letter is not None and letter.group == group:
                del self._letters[key]
                removed.append(str(key))
        return removed

    async def summary(self, groups: Sequence[str]) -> list[GroupSummary]:
        result = []
        for group in groups:
            kept = [x.stored_at for x in self._letters.values() if x.group == group]
            result.append(GroupSummary(group, len(kept), min((t for t in kept if t), default=None)))
        return result

    async def newest(self, group: str) -> str | None:
        kept = [key for key, letter in self._letters.items() if letter.group == group]
        return str(max(kept)) if kept else None

    async def delete_stored_before(self, cutoff: datetime, limit: int) -> int:
        old = [k for k, x in self._letters.items() if x.stored_at and x.stored_at < cutoff]
        for key in old[:limit]:
            del self._letters[key]
        return len(old[:limit])


def _listed(letter: StoredDeadLetter) -> StoredDeadLetter:
    if len(letter.body) <= LISTED_BODY_BYTES:
        return letter
    return replace(letter, body=letter.body[:LISTED_BODY_BYTES], kept_body_size=len(letter.body))


def _kept(letter: StoredDeadLetter, letter_id: str) -> StoredDeadLetter:
    return replace(letter, id=letter_id, stored_at=datetime.now(UTC))
