"""Dead letters as shop.ops reads them: asked of each group's worker through the routes
every worker serves (:func:`shop.messaging.internal.dead_letter_routes`, here on a
hand-written store), filtered there by type and here by text; redriven and purged one
request per letter."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import replace
from datetime import UTC, datetime

import pytest
from pydantic import SecretStr

from shop.messaging import StoredDeadLetter
from shop.messaging.deadletters import (
    MAX_PAGE,
    Arrival,
    DeadLetterFilter,
    DeadLetterPage,
    DeadLetters,
    GroupSummary,
)
from shop.messaging.internal import dead_letter_routes
from shop.messaging.testing import operator_port
from shop.ops.deadletters import (
    DeadLetterEntry,
    DeadLetterQuery,
    GroupCount,
    NoSuchDeadLetter,
    list_dead_letters,
    page_dead_letters,
    purge_dead_letter,
    purge_dead_letters,
    redrive_dead_letter,
    redrive_dead_letters,
    show_dead_letter,
)
from shop.ops.errors import OpsError
from shop.ops.services import ConsumerGroupOf
from shop.ops.settings import OpsSettings

NOW = datetime(2026, 12, 3, tzinfo=UTC)
TOKEN = "an-operator-token-of-this-test-long-enough"
NOTIFICATION = "notification-service"
PAYMENT = "payment-service"


def stored(
    *,
    id: str = "1",
    group: str = NOTIFICATION,
    message_type: str = "order.created",
    error_type: str = "EmailRejected",
    error_message: str = "550 mailbox unavailable",
    key: str = "6f1c2a4e-8d3b-4c1a-9e2f-0a1b2c3d4e5f",
    body: bytes = b'{"payload": {"order_number": "SK-7KQ4-M2XD"}}',
    whole_body_size: int | None = None,
) -> StoredDeadLetter:
    return StoredDeadLetter(
        id=id,
        group=group,
        source="shop-order-created",
        message_type=message_type,
        body=body,
        headers={"x-shop-test": "yes"},
        error_type=error_type,
        error_message=error_message,
        attempts=1,
        first_failure_at=NOW,
        last_failure_at=NOW,
        key=key,
        whole_body_size=whole_body_size,
    )


def letter(**fields: object) -> DeadLetterEntry:
    kept = stored(**fields)  # type: ignore[arg-type]
    return DeadLetterEntry(
        id=kept.id,
        service=kept.group,
        group=kept.group,
        source=kept.source,
        message_type=kept.message_type,
        key=kept.key,
        error_type=kept.error_type,
        error_message=kept.error_message,
        attempts=kept.attempts,
        first_failure_at=NOW,
        last_failure_at=NOW,
        truncated=kept.truncated,
        body=kept.body,
        headers=dict(kept.headers),
    )


class KeptLetters:
    """A service's dead-letter store and its transport's courier in memory: what it holds
    (in the order given) and what went back."""

    def __init__(self, *letters: StoredDeadLetter) -> None:
        self.held = list(letters)
        self.redriven: list[str] = []

    async def keep(self, letters: Sequence[StoredDeadLetter]) -> int:
        raise AssertionError("nothing is collected here")

    async def page(
        self, group: str, where: DeadLetterFilter, *, after: str | None, limit: int
    ) -> DeadLetterPage:
        # After the cursor's letter by id, as the table reads it: that letter may be gone.
        later = [x for x in self.held if after is None or int(x.id) > int(after)]
        matching = [x for x in later if x.group == group and where.matches(x)]
        page = matching[:limit]
        return DeadLetterPage(page, page[-1].id if len(matching) > limit else None)

    async def get(self, group: str, letter_id: str) -> StoredDeadLetter | None:
        return next((x for x in self.held if (x.group, x.id) == (group, letter_id)), None)

    async def remove(self, group: str, letter_ids: Sequence[str]) -> list[str]:
        gone = [x for x in self.held if x.group == group and x.id in letter_ids]
        for letter in gone:
            self.held.remove(letter)
        return [x.id for x in gone]

    async def summary(self, groups: Sequence[str]) -> list[GroupSummary]:
        raise AssertionError("not asked by the routes")

    async def newest(self, group: str) -> str | None:
        return max((x.id for x in self.held if x.group == group), key=int, default=None)

    async def delete_stored_before(self, cutoff: datetime, limit: int) -> int:
        raise AssertionError("not asked by the routes")

    async def fetch(self, group: str, limit: int) -> list[Arrival]:
        return []

    async def fetched(self, group: str, arrivals: Sequence[Arrival]) -> None:
        raise AssertionError("nothing is collected here")

    async def unfetched(self, group: str, arrivals: Sequence[Arrival]) -> None:
        raise AssertionError("nothing is collected here")

    async def redeliver(self, group: str, letter: StoredDeadLetter) -> None:
        self.redriven.append(letter.id)


def letters_in(store: KeptLetters) -> Callable[[str], DeadLetters]:
    return lambda group: DeadLetters(store, store, group)


@asynccontextmanager
async def workers(store: KeptLetters) -> AsyncIterator[OpsSettings]:
    """Payment's and notification's workers serving ``store``'s letters of their groups."""
    async with (
        operator_port(dead_letter_routes(letters_in(store), [PAYMENT]), token=TOKEN) as payment,
        operator_port(dead_letter_routes(letters_in(store), [NOTIFICATION]), token=TOKEN) as mail,
        operator_port(
            dead_letter_routes(letters_in(store), ["order-service"]), token=TOKEN
        ) as order,
    ):
        yield OpsSettings(
            environment="test",
            order_worker_url=order,
            payment_worker_url=payment,
            notification_worker_url=mail,
            operator_token=SecretStr(TOKEN),
        )


def consumer(service: str, group: str) -> ConsumerGroupOf:
    return ConsumerGroupOf(service=service, group=group)


def test_an_empty_query_takes_every_group_and_matches_every_letter() -> None:
    query = DeadLetterQuery()
    assert query.takes(consumer("order-service", "order-service"))
    assert query.matches(letter())
    assert query.params == {}


def test_service_and_group_choose_the_groups() -> None:
    payment = consumer(PAYMENT, PAYMENT)
    notification = consumer(NOTIFICATION, NOTIFICATION)
    assert DeadLetterQuery(service=PAYMENT).takes(payment)
    assert not DeadLetterQuery(service=PAYMENT).takes(notification)
    assert DeadLetterQuery(group=NOTIFICATION).takes(notification)
    assert not DeadLetterQuery(service=PAYMENT, group=NOTIFICATION).takes(notification)


def test_type_and_error_type_must_match_exactly_and_are_asked_of_the_worker() -> None:
    assert DeadLetterQuery(message_type="order.created").matches(letter())
    assert not DeadLetterQuery(message_type="order.paid").matches(letter())
    assert DeadLetterQuery(error_type="EmailRejected").matches(letter())
    assert not DeadLetterQuery(error_type="PermanentError").matches(letter())
    assert DeadLetterQuery(error_type="EmailRejected", contains="x").params == {
        "error_type": "EmailRejected"
    }


def test_contains_finds_text_in_the_error_the_key_or_the_body_in_any_case() -> None:
    assert DeadLetterQuery(contains="MAILBOX").matches(letter())
    assert DeadLetterQuery(contains="6f1c2a4e").matches(letter())
    assert DeadLetterQuery(contains="sk-7kq4").matches(letter())
    assert not DeadLetterQuery(contains="SK-0000").matches(letter())
    assert DeadLetterQuery(contains="x").matches(letter(body=b"\xff\xfex"))


async def test_letters_are_read_from_each_groups_worker_byte_for_byte() -> None:
    bounced = stored(body=b"\xff\xfe not quite utf-8")
    refused = stored(id="2", group=PAYMENT, error_type="PermanentError", error_message="no")
    async with workers(KeptLetters(bounced, refused)) as settings:
        letters = await list_dead_letters(settings)
        assert [(x.service, x.id) for x in letters] == [(NOTIFICATION, "1"), (PAYMENT, "2")]
        assert letters[0] == replace(letter(), body=bounced.body)
        by_text = await list_dead_letters(settings, DeadLetterQuery(contains="MAILBOX"))
        assert [x.id for x in by_text] == ["1"]
        by_error = await list_dead_letters(settings, DeadLetterQuery(error_type="PermanentError"))
        assert [x.group for x in by_error] == [PAYMENT]
        assert await show_dead_letter(settings, "2") == by_error[0]  # found in its group


async def test_one_letter_is_redriven_by_its_group_and_an_unknown_one_said_so() -> None:
    store = KeptLetters(stored(), stored(id="9", whole_body_size=10_000))
    async with workers(store) as settings:
        redriven = await redrive_dead_letter(settings, "1", group=NOTIFICATION)
        assert (redriven.id, store.redriven) == ("1", ["1"])
        with pytest.raises(NoSuchDeadLetter, match="no dead letter '1' in group"):
            await redrive_dead_letter(settings, "1", group=NOTIFICATION)
        with pytest.raises(OpsError, match="409"):
            await redrive_dead_letter(settings, "9", group=NOTIFICATION)
        with pytest.raises(OpsError, match="no consumer group matches"):
            await show_dead_letter(settings, "1", group="stock-service")


async def test_a_bulk_redrive_goes_letter_by_letter_leaving_the_truncated_ones() -> None:
    store = KeptLetters(
        stored(id="1"),
        stored(id="2", error_message="451 try later"),
        stored(id="3", whole_body_size=10_000),
        stored(id="4", group=PAYMENT),
    )
    async with workers(store) as settings:
        counts = await redrive_dead_letters(
            settings, DeadLetterQuery(service=NOTIFICATION), per_second=1000
        )
        assert counts == [GroupCount(NOTIFICATION, NOTIFICATION, 2)]
        assert store.redriven == ["1", "2"]
        with pytest.raises(OpsError, match="must be positive"):
            await redrive_dead_letters(settings, per_second=0)


class DeadAgain(KeptLetters):
    """A consumer that fails every letter redriven to it again: each comes back at once
    under a new id, as the collector keeps it anew."""

    async def redeliver(self, group: str, letter: StoredDeadLetter) -> None:
        await super().redeliver(group, letter)
        newest = max(int(x.id) for x in self.held)
        self.held.append(replace(letter, id=str(newest + 1)))


async def test_a_bulk_redrive_ends_with_the_letters_it_found_though_they_fail_again() -> None:
    found = [str(n) for n in range(1, MAX_PAGE + 2)]  # more than a worker's page
    store = DeadAgain(*(stored(id=letter_id) for letter_id in found))
    async with workers(store) as settings:
        counts = await asyncio.wait_for(
            redrive_dead_letters(
                settings, DeadLetterQuery(service=NOTIFICATION), per_second=100_000
            ),
            timeout=30,
        )
    assert counts == [GroupCount(NOTIFICATION, NOTIFICATION, len(found))]
    assert store.redriven == found
    assert len(store.held) == len(found), "each back once, and left there"


class ArrivingWhilePurged(KeptLetters):
    """Letters that keep arriving while a purge deletes: one more with each deletion."""

    async def remove(self, group: str, letter_ids: Sequence[str]) -> list[str]:
        newest = max(int(x.id) for x in self.held)
        self.held.append(stored(id=str(newest + 1)))
        return await super().remove(group, letter_ids)


async def test_a_purge_by_what_the_workers_filter_leaves_the_letters_that_arrived_meanwhile() -> (
    None
):
    found = [str(n) for n in range(1, MAX_PAGE + 2)]
    store = ArrivingWhilePurged(*(stored(id=letter_id) for letter_id in found))
    async with workers(store) as settings:
        query = DeadLetterQuery(service=NOTIFICATION, error_type="EmailRejected")
        [purged] = await asyncio.wait_for(purge_dead_letters(settings, query), timeout=30)
    assert list(purged.ids) == found
    assert [x.id for x in store.held] == [str(len(found) + n) for n in (1, 2)]


async def test_purging_removes_only_what_matches_in_every_group() -> None:
    store = KeptLetters(
        stored(id="1"),
        stored(id="2", error_message="451 try later"),
        stored(id="3", group=PAYMENT, error_message="card declined"),
    )
    async with workers(store) as settings:
        counts = await purge_dead_letters(settings, DeadLetterQuery(contains="mailbox"))
        assert counts == [
            GroupCount(NOTIFICATION, NOTIFICATION, 1),
            GroupCount("order-service", "order-service", 0),
            GroupCount(PAYMENT, PAYMENT, 0),
        ]
        assert [x.id for x in store.held] == ["2", "3"]
        assert counts[0].ids == ("1",)


async def test_purging_by_what_the_workers_filter_deletes_there_and_names_each_letter() -> None:
    store = KeptLetters(
        stored(id="11"),
        stored(id="12", error_type="EmailUnavailable"),
        stored(id="13", group=PAYMENT, error_type="EmailUnavailable"),
    )
    async with workers(store) as settings:
        counts = await purge_dead_letters(settings, DeadLetterQuery(error_type="EmailUnavailable"))
        one = await purge_dead_letter(settings, "11", group=NOTIFICATION)
        with pytest.raises(NoSuchDeadLetter, match="no dead letter '11'"):
            await purge_dead_letter(settings, "11", group=NOTIFICATION)
    assert [(c.group, c.count, c.ids) for c in counts] == [
        (NOTIFICATION, 1, ("12",)),
        ("order-service", 0, ()),
        (PAYMENT, 1, ("13",)),
    ]
    assert (one.group, one.ids, one.count) == (NOTIFICATION, ("11",), 1)
    assert store.held == []


async def test_pages_run_group_after_group_and_each_starts_where_its_cursor_says() -> None:
    store = KeptLetters(
        *(stored(id=str(n)) for n in range(11, 14)),
        *(stored(id=str(n), group=PAYMENT) for n in range(21, 23)),
    )
    async with workers(store) as settings:
        pages = []
        cursor = None
        while True:
            page = await page_dead_letters(settings, cursor=cursor, limit=2)
            pages.append([x.id for x in page.letters])
            if page.next_cursor is None:
                break
            cursor = page.next_cursor
        with pytest.raises(OpsError, match="names no group"):
            await page_dead_letters(settings, cursor="billing/3")
        with pytest.raises(OpsError, match="between 1 and 200"):
            await page_dead_letters(settings, limit=201)
    assert pages == [["11", "12"], ["13", "21"], ["22"]]
