"""The internal API every service's worker port serves under ``/internal/v1`` for its
operators (the console, ``shopctl``): what its own outbox and inbox hold, and its
consumers' dead letters (every worker serves those of its own groups from its store, a
page at a time, with a redrive and a purge). A service adds its own routes beside
these (its orders, its payments, its e-mails), with the same query helpers, so that no
operator tool ever reads a service's tables.

Every answer is JSON; a query that cannot be read is a 400 that says which parameter and
why (:class:`BadQuery`), never an error of the server. A POST's JSON body (an object of
strings) is read as more parameters; a customer's address is taken from the body only.
An unexpected failure is a problem document too (:class:`~shop.messaging.health.HealthServer`):
a 503 with ``Retry-After`` when the service's database cannot be reached or was too slow
(the worker's ``outage``), else a 500."""

from __future__ import annotations

import base64
import uuid
from collections.abc import Awaitable, Callable, Mapping, Sequence
from datetime import datetime
from typing import Any, Final

from pydantic import TypeAdapter, ValidationError
from sqlalchemy import select, text
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from shop.contracts.base import EmailAddress
from shop.messaging.deadletters import (
    MAX_PAGE,
    DeadLetterFilter,
    DeadLetters,
    StoredDeadLetter,
    letter_key,
)
from shop.messaging.health import OperatorRoute
from shop.messaging.schema import inbox, outbox

PREFIX: Final = "/internal/v1"
OUTBOX_PATH: Final = f"{PREFIX}/outbox"
OUTBOX_MESSAGES_PATH: Final = f"{PREFIX}/outbox/messages"
INBOX_PATH: Final = f"{PREFIX}/inbox"
DEAD_LETTERS_PATH: Final = f"{PREFIX}/dead-letters"
DEAD_LETTER_PATH: Final = f"{DEAD_LETTERS_PATH}/{{group}}/{{letter_id}}"
FORGET_CUSTOMER_PATH: Final = f"{PREFIX}/customers/forget"
"""``POST``: erase or anonymise one customer in the service's store (every service that
keeps something of its customers serves it; ``shopctl forget-customer`` asks each). The
address goes in the JSON body, never the URL (:data:`~shop.messaging.health.PRIVATE_FIELDS`)."""
CUSTOMER_ORDERS_PATH: Final = f"{PREFIX}/customers/orders"
"""``POST``: the ids of the orders placed with an address (order-service's; what the other
services are asked to forget of them)."""
DEVELOPMENT_OPERATOR_TOKEN: Final = "operator-development-token-do-not-deploy"
"""The operator token ``make run`` and compose's example give every service: in the
repository, so each service's settings refuse it in production."""
MAX_IDS: Final = 200
"""Ids one query may list (``?event_ids=a,b,…``): a caller with more asks in parts."""

Answer = Callable[[Mapping[str, str]], Awaitable[tuple[int, Any]]]
_EMAIL: Final = TypeAdapter(EmailAddress)


class BadQuery(ValueError):
    """A query parameter that cannot be read; its message says which and why."""


class NotFound(LookupError):
    """What the path names does not exist here; its message says what was looked for."""


class Conflict(RuntimeError):
    """What the path names cannot be done now (a dead letter kept truncated cannot be
    redriven); its message says why."""


def answering(read: Callable[[Mapping[str, str]], Awaitable[Any]]) -> Answer:
    """An operator route's answer from ``read``: 200 with what it returns, 400 with the
    :class:`BadQuery` or 404 with the :class:`NotFound` it raised."""

    async def answer(query: Mapping[str, str]) -> tuple[int, Any]:
        try:
            return 200, await read(query)
        except BadQuery as bad:
            return 400, {"detail": str(bad)}
        except NotFound as missing:
            return 404, {"detail": str(missing)}
        except Conflict as refused:
            return 409, {"detail": str(refused)}

    return answer


def required(query: Mapping[str, str], name: str) -> str:
    value = query.get(name, "").strip()
    if not value:
        raise BadQuery(f"{name} is required")
    return value


def reference_of(query: Mapping[str, str], name: str) -> str:
    """A path's reference to an order (its id or its number): short and printable."""
    value = required(query, name)
    if len(value) > 100 or not value.isprintable():
        raise BadQuery(f"{name} must be an order's id or number")
    return value


def email_of(query: Mapping[str, str], name: str = "email") -> str:
    """A customer's e-mail address, checked and normalised as the contracts check it."""
    value = required(query, name)
    try:
        address: str = _EMAIL.validate_python(value)
    except ValidationError:
        raise BadQuery(f"{name} must be an e-mail address") from None
    return address


def as_uuid(name: str, value: str) -> uuid.UUID:
    try:
        return uuid.UUID(value.strip())
    except ValueError:
        raise BadQuery(f"{name}={value!r} is not a UUID") from None


def uuids(query: Mapping[str, str], name: str) -> list[uuid.UUID]:
    """``?name=a,b,c``: at least one id, at most :data:`MAX_IDS`."""
    values = [part for part in required(query, name).split(",") if part.strip()]
    if len(values) > MAX_IDS:
        raise BadQuery(f"{name} lists {len(values)} ids; ask for at most {MAX_IDS} at a time")
    return [as_uuid(name, value) for value in values]


def time_of(query: Mapping[str, str], name: str) -> datetime | None:
    """An ISO 8601 time with its zone, or None when the parameter is absent."""
    if name not in query:
        return None
    try:
        at = datetime.fromisoformat(query[name])
    except ValueError:
        raise BadQuery(f"{name}={query[name]!r} is not an ISO 8601 time") from None
    if at.tzinfo is None:
        raise BadQuery(f"{name} needs a time zone (e.g. 2026-12-01T00:00:00Z)")
    return at


def limit_of(query: Mapping[str, str], *, default: int, most: int) -> int:
    raw = query.get("limit", str(default))
    try:
        limit = int(raw)
    except ValueError:
        raise BadQuery(f"limit={raw!r} is not a whole number") from None
    if not 1 <= limit <= most:
        raise BadQuery(f"limit must be between 1 and {most}")
    return limit


def iso(at: datetime | None) -> str | None:
    return None if at is None else at.isoformat()


# Due and unsent is what the relay has to publish now; a scheduled row counts once it has
# fallen due, and its age from then (as the relay's own backlog gauge counts it).
_STATUS: Final = text(
    """
    SELECT
        count(*) FILTER (WHERE published_at IS NULL AND (due_at IS NULL OR due_at <= now())),
        coalesce(extract(epoch FROM now() - min(coalesce(due_at, created_at)) FILTER (
            WHERE published_at IS NULL AND (due_at IS NULL OR due_at <= now())
        )), 0)::float8,
        count(*) FILTER (WHERE published_at IS NULL AND due_at > now()),
        count(*) FILTER (WHERE published_at IS NOT NULL)
    FROM outbox
    """
)


def outbox_routes(sessions: async_sessionmaker[AsyncSession]) -> list[OperatorRoute]:
    """``GET /internal/v1/outbox``: the outbox's status (the relay's backlog);
    ``GET /internal/v1/outbox/messages?key=…``: the messages kept for one key (an order's
    id), oldest first, without their bodies."""

    async def status(_: Mapping[str, str]) -> dict[str, Any]:
        async with sessions() as session:
            unsent, age, scheduled, sent = (await session.execute(_STATUS)).one()
        return {
            "unsent": int(unsent),
            "oldest_unsent_age_seconds": float(age),
            "scheduled": int(scheduled),
            "sent_kept": int(sent),
        }

    async def messages(query: Mapping[str, str]) -> dict[str, Any]:
        key = required(query, "key")
        statement = (
            select(
                outbox.c.event_id,
                outbox.c.message_type,
                outbox.c.created_at,
                outbox.c.published_at,
                outbox.c.due_at,
            )
            .where(outbox.c.key == key)
            .order_by(outbox.c.id)
        )
        async with sessions() as session:
            rows = (await session.execute(statement)).all()
        return {
            "key": key,
            "messages": [
                {
                    "event_id": str(row.event_id),
                    "message_type": row.message_type,
                    "created_at": iso(row.created_at),
                    "published_at": iso(row.published_at),
                    "due_at": iso(row.due_at),
                }
                for row in rows
            ],
        }

    return [
        OperatorRoute("GET", OUTBOX_PATH, answering(status)),
        OperatorRoute("GET", OUTBOX_MESSAGES_PATH, answering(messages)),
    ]


def inbox_route(sessions: async_sessionmaker[AsyncSession]) -> OperatorRoute:
    """``GET /internal/v1/inbox?event_ids=a,b,…``: which of those messages each of the
    service's consumers handled, and when."""

    async def handled(query: Mapping[str, str]) -> dict[str, Any]:
        event_ids = uuids(query, "event_ids")
        statement = (
            select(inbox.c.consumer, inbox.c.event_id, inbox.c.message_type, inbox.c.processed_at)
            .where(inbox.c.event_id.in_(event_ids))
            .order_by(inbox.c.processed_at)
        )
        async with sessions() as session:
            rows = (await session.execute(statement)).all()
        return {
            "handled": [
                {
                    "consumer": row.consumer,
                    "event_id": str(row.event_id),
                    "message_type": row.message_type,
                    "processed_at": iso(row.processed_at),
                }
                for row in rows
            ]
        }

    return OperatorRoute("GET", INBOX_PATH, answering(handled))


def dead_letter_document(letter: StoredDeadLetter) -> dict[str, Any]:
    """A dead letter as JSON: the body byte for byte (base64), and as text to read (in a
    page, its first bytes only when ``kept_body_size`` is set); a letter whose dead-letter
    keys could not be read says what was wrong (``problems``)."""
    return {
        "id": letter.id,
        "group": letter.group,
        "source": letter.source,
        "message_type": letter.message_type,
        "key": letter.key,
        "error_type": letter.error_type,
        "error_message": letter.error_message,
        "attempts": letter.attempts,
        "first_failure_at": iso(letter.first_failure_at),
        "last_failure_at": iso(letter.last_failure_at),
        "stored_at": iso(letter.stored_at),
        "truncated": letter.truncated,
        "whole_body_size": letter.whole_body_size,
        "malformed": letter.malformed,
        "kept_body_size": letter.kept_body_size,
        "problems": list(letter.problems),
        "headers": dict(letter.headers),
        "body": letter.body.decode("utf-8", errors="replace"),
        "body_base64": base64.b64encode(letter.body).decode("ascii"),
    }


def dead_letter_filter(query: Mapping[str, str]) -> DeadLetterFilter:
    """``message_type``, ``error_type``, ``error_contains``, the time range ``since``,
    ``until`` (of the last failure, ISO 8601 with a zone), and ``kept_through`` (a letter
    id: none kept after it, what a listing's ``newest`` said when a long task began)."""
    return DeadLetterFilter(
        message_type=query.get("message_type") or None,
        error_type=query.get("error_type") or None,
        error_contains=query.get("error_contains") or None,
        since=time_of(query, "since"),
        until=time_of(query, "until"),
        kept_through=_letter_id(query, "kept_through"),
    )


def _letter_id(query: Mapping[str, str], name: str) -> str | None:
    value = query.get(name) or None
    if value is not None and letter_key(value) is None:
        raise BadQuery(f"{name}={value[:40]!r} is not a letter id this worker gave")
    return value


def dead_letter_routes(
    letters_of: Callable[[str], DeadLetters], groups: Sequence[str]
) -> list[OperatorRoute]:
    """The dead letters of ``groups`` (a worker's consumers), ``letters_of(group)``:

    - ``GET /internal/v1/dead-letters?group=…[&message_type=…&error_type=…&error_contains=…
      &since=…&until=…&kept_through=…&after=…&limit=…]``: one page of a group's letters,
      oldest first, ``next_after``, the cursor of the next page (null on the last), and
      ``newest``, the id of the group's letter kept last (null without any): a task over
      many pages (a redrive of all) passes it on as ``kept_through``, so that letters taken
      in meanwhile, a redriven one dead again among them, are not in it. ``limit`` at most
      :data:`~shop.messaging.deadletters.MAX_PAGE`. Without ``group``, the first group's
      (``groups`` lists them all);
    - ``GET /internal/v1/dead-letters/{group}/{letter_id}``: one;
    - ``POST /internal/v1/dead-letters/{group}/{letter_id}/redrive``: back to that consumer
      alone, then deleted here (409 for one kept truncated);
    - ``POST /internal/v1/dead-letters/{group}/{letter_id}/purge``: deleted, body and all;
    - ``POST /internal/v1/dead-letters/{group}/purge[?filters…&limit=…]``: the matching
      letters deleted, at most ``limit``; ask again, with the ``kept_through`` it answered,
      until ``count`` is 0 (letters taken in meanwhile were seen by no one: they stay).

    A purge answers what it deleted: ``purged`` (the ids) and ``count``.
    """
    known = tuple(groups)

    def group_of(query: Mapping[str, str]) -> DeadLetters:
        group = query.get("group") or (known[0] if known else "")
        if group not in known:
            raise BadQuery(f"group {group!r} is none of this worker's ({', '.join(known)})")
        return letters_of(group)

    async def listed(query: Mapping[str, str]) -> dict[str, Any]:
        letters = group_of(query)
        limit = limit_of(query, default=MAX_PAGE, most=MAX_PAGE)
        after = query.get("after") or None
        if after is not None and letter_key(after) is None:
            raise BadQuery(f"after={after[:40]!r} is not a cursor this listing gave (next_after)")
        where = dead_letter_filter(query)
        newest = await letters.store.newest(letters.group)
        page = await letters.page(where, after=after, limit=limit)
        return {
            "group": letters.group,
            "groups": list(known),
            "dead_letters": [dead_letter_document(letter) for letter in page.letters],
            "next_after": page.next_after,
            "newest": newest,
        }

    async def one(query: Mapping[str, str]) -> dict[str, Any]:
        letters = group_of(query)
        try:
            return dead_letter_document(await letters.show(query["letter_id"]))
        except KeyError as missing:
            raise NotFound(str(missing).strip("'\"")) from None

    async def redrive(query: Mapping[str, str]) -> dict[str, Any]:
        letters = group_of(query)
        try:
            return dead_letter_document(await letters.redrive_one(query["letter_id"]))
        except KeyError as missing:
            raise NotFound(str(missing).strip("'\"")) from None
        except ValueError as truncated:
            raise Conflict(str(truncated)) from None

    async def purge(query: Mapping[str, str]) -> dict[str, Any]:
        letters = group_of(query)
        removed = await letters.store.remove(letters.group, [query["letter_id"]])
        if not removed:
            raise NotFound(f"{letters.group} has no dead letter {query['letter_id']!r}")
        return {"group": letters.group, "purged": removed, "count": len(removed)}

    async def purge_matching(query: Mapping[str, str]) -> dict[str, Any]:
        letters = group_of(query)
        limit = limit_of(query, default=MAX_PAGE, most=MAX_PAGE)
        where = await letters.as_found_now(dead_letter_filter(query))
        removed = [] if where is None else await letters.purge_ids(where, most=limit)
        return {
            "group": letters.group,
            "purged": removed,
            "count": len(removed),
            "kept_through": None if where is None else where.kept_through,
        }

    return [
        OperatorRoute("GET", DEAD_LETTERS_PATH, answering(listed)),
        OperatorRoute("POST", f"{DEAD_LETTERS_PATH}/{{group}}/purge", answering(purge_matching)),
        OperatorRoute("GET", DEAD_LETTER_PATH, answering(one)),
        OperatorRoute("POST", f"{DEAD_LETTER_PATH}/redrive", answering(redrive)),
        OperatorRoute("POST", f"{DEAD_LETTER_PATH}/purge", answering(purge)),
    ]
