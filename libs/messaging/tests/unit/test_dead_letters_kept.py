"""Dead letters as a worker keeps them, on the store's in-memory twin and a hand-written
courier: a letter whose dead-letter keys cannot be read is kept and shown as bad beside the
others; a collected batch leaves the broker only once kept; pages are bounded and follow
a cursor; a purge says what it deleted; a redrive goes to the courier, then leaves the
store; the retention deletes only what is past it, and the gauges show what waits."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest
from prometheus_client import CollectorRegistry

from shop.messaging import headers as h
from shop.messaging.deadletter_collector import DeadLetterCollector
from shop.messaging.deadletter_retention import DeadLetterCleanup, DeadLetterGauges
from shop.messaging.deadletter_table import MemoryDeadLetterStore
from shop.messaging.deadletters import (
    MAX_PAGE,
    Arrival,
    DeadLetterFilter,
    DeadLetters,
    StoredDeadLetter,
    dead_letter_headers,
    read_dead_letter,
)
from shop.messaging.message import Delivery
from shop.messaging.outcome import DeadLetter, Failure

GROUP = "notification-service"
FAILED_AT = datetime(2026, 12, 1, 8, 0, tzinfo=UTC)


def carried(transport_id: str, error: str = "550 mailbox unavailable", **bad: str) -> Arrival:
    """A dead letter as a courier fetches it, its keys overridden by ``bad``."""
    delivery = Delivery(b'{"order": 1}', {h.MESSAGE_TYPE: "order.created"}, "shop-order-created")
    outcome = DeadLetter(Failure("PermanentError", error), 1, FAILED_AT, FAILED_AT)
    stored = {**dead_letter_headers(GROUP, delivery, outcome), **bad}
    return Arrival(read_dead_letter(transport_id, delivery.body, stored), handle=transport_id)


class Courier:
    """Dead letters waiting on a broker, and what was taken off it or sent back."""

    def __init__(self, *waiting: Arrival) -> None:
        self.waiting = list(waiting)
        self.taken_off: list[str] = []
        self.released: list[str] = []
        self.redelivered: list[str] = []

    async def fetch(self, group: str, limit: int) -> list[Arrival]:
        return self.waiting[:limit]

    async def fetched(self, group: str, arrivals: Sequence[Arrival]) -> None:
        for arrival in arrivals:
            self.waiting.remove(arrival)
            self.taken_off.append(str(arrival.handle))

    async def unfetched(self, group: str, arrivals: Sequence[Arrival]) -> None:
        self.released += [str(arrival.handle) for arrival in arrivals]

    async def redeliver(self, group: str, letter: StoredDeadLetter) -> None:
        self.redelivered.append(letter.transport_id)


class RefusingStore(MemoryDeadLetterStore):
    async def keep(self, letters: Sequence[StoredDeadLetter]) -> int:
        raise ConnectionRefusedError("the database is away")


def test_a_letter_whose_keys_cannot_be_read_is_read_with_what_was_wrong() -> None:
    letter = carried(
        "0-1",
        **{h.DEAD_LETTER_ATTEMPTS: "x", h.DEAD_LETTER_LAST_FAILURE_AT: "yesterday"},
    ).letter
    assert letter.malformed
    assert letter.problems == (
        "x-dead-letter-attempts='x' is not a whole number",
        "x-dead-letter-last-failure-at='yesterday' is not an ISO 8601 time",
    )
    assert (letter.attempts, letter.error_message) == (0, "550 mailbox unavailable")
    assert not carried("0-2").letter.malformed


def test_a_letter_without_any_dead_letter_key_is_still_read() -> None:
    letter = read_dead_letter("0-3", b"\xff", {"x-dead-letter-body-size": "-4"})
    assert letter.error_type == "unknown"
    assert "no error type was recorded" in letter.problems
    assert "x-dead-letter-body-size=-4 is negative" in letter.problems
    assert not letter.truncated


async def test_a_bad_letter_is_kept_and_listed_as_bad_beside_the_good_ones() -> None:
    courier = Courier(
        carried("0-1"), carried("0-2", **{h.DEAD_LETTER_ATTEMPTS: "x"}), carried("0-3")
    )
    store = MemoryDeadLetterStore()
    collector = DeadLetterCollector(courier, store, [GROUP], interval=1)

    assert await collector.collect(GROUP) == 3
    letters = await DeadLetters(store, courier, GROUP).list()

    assert [(x.transport_id, x.malformed) for x in letters] == [
        ("0-1", False),
        ("0-2", True),
        ("0-3", False),
    ]
    assert courier.taken_off == ["0-1", "0-2", "0-3"]


async def test_a_letter_of_another_consumer_on_this_ones_dead_letters_is_kept_as_bad() -> None:
    courier = Courier(carried("0-1", **{h.DEAD_LETTER_CONSUMER: "billing"}))
    store = MemoryDeadLetterStore()
    await DeadLetterCollector(courier, store, [GROUP], interval=1).collect(GROUP)
    (letter,) = await DeadLetters(store, courier, GROUP).list()
    assert letter.group == GROUP
    assert letter.problems == (f"x-dead-letter-consumer='billing' on {GROUP}'s dead letters",)


async def test_a_batch_the_store_could_not_keep_stays_on_the_broker() -> None:
    courier = Courier(carried("0-1"), carried("0-2"))
    collector = DeadLetterCollector(courier, RefusingStore(), [GROUP], interval=1)
    with pytest.raises(ConnectionRefusedError):
        await collector.collect(GROUP)
    assert courier.taken_off == []
    assert courier.released == ["0-1", "0-2"]


async def test_a_letter_collected_twice_is_kept_once() -> None:
    store = MemoryDeadLetterStore()
    first = Courier(carried("0-1"))
    again = Courier(carried("0-1"), carried("0-2"))
    await DeadLetterCollector(first, store, [GROUP], interval=1).collect(GROUP)
    await DeadLetterCollector(again, store, [GROUP], interval=1).collect(GROUP)
    letters = await DeadLetters(store, again, GROUP).list()
    assert [x.transport_id for x in letters] == ["0-1", "0-2"]


async def test_pages_are_bounded_and_follow_their_cursor() -> None:
    store = MemoryDeadLetterStore()
    await store.keep([carried(str(n)).letter for n in range(7)])
    letters = DeadLetters(store, Courier(), GROUP)

    first = await letters.page(limit=3)
    second = await letters.page(after=first.next_after, limit=3)
    last = await letters.page(after=second.next_after, limit=3)

    assert [len(p.letters) for p in (first, second, last)] == [3, 3, 1]
    assert first.next_after == first.letters[-1].id
    assert last.next_after is None
    seen = [x.transport_id for p in (first, second, last) for x in p.letters]
    assert seen == [str(n) for n in range(7)]
    with pytest.raises(ValueError, match="between 1 and"):
        await letters.page(limit=MAX_PAGE + 1)


async def test_a_purge_deletes_what_matches_and_says_which() -> None:
    store = MemoryDeadLetterStore()
    await store.keep(
        [carried("0-1").letter, carried("0-2", error="451 later").letter, carried("0-3").letter]
    )
    letters = DeadLetters(store, Courier(), GROUP)
    kept = {x.transport_id: x.id for x in await letters.list()}

    purged = await letters.purge_ids(DeadLetterFilter(error_contains="MAILBOX"))

    assert purged == [kept["0-1"], kept["0-3"]]
    assert [x.transport_id for x in await letters.list()] == ["0-2"]
    assert await letters.purge_ids(DeadLetterFilter(error_contains="mailbox")) == []


async def test_a_redrive_hands_the_letter_to_the_courier_then_deletes_it() -> None:
    store = MemoryDeadLetterStore()
    await store.keep([carried("0-1").letter, carried("0-2").letter])
    courier = Courier()
    letters = DeadLetters(store, courier, GROUP)
    first = (await letters.list())[0]

    await letters.redrive_one(first.id)

    assert courier.redelivered == ["0-1"]
    assert [x.transport_id for x in await letters.list()] == ["0-2"]
    with pytest.raises(KeyError):
        await letters.redrive_one(first.id)


class DeadAgainCourier(Courier):
    """A consumer that still fails every letter redriven to it: each comes back at once, a
    new dead letter in the store."""

    def __init__(self, store: MemoryDeadLetterStore) -> None:
        super().__init__()
        self.store = store

    async def redeliver(self, group: str, letter: StoredDeadLetter) -> None:
        await super().redeliver(group, letter)
        again = replace(letter, transport_id=f"{letter.transport_id}-again")
        await self.store.keep([again])


async def test_a_redrive_of_all_ends_with_the_letters_it_found_though_they_fail_again() -> None:
    store = MemoryDeadLetterStore()
    found = [f"0-{n}" for n in range(MAX_PAGE + 1)]  # more than a page
    await store.keep([carried(transport_id).letter for transport_id in found])
    courier = DeadAgainCourier(store)
    letters = DeadLetters(store, courier, GROUP)

    moved = await asyncio.wait_for(letters.redrive(per_second=100_000), timeout=10)

    assert (moved, courier.redelivered) == (len(found), found)
    assert [x.transport_id for x in await letters.list()] == [f"{x}-again" for x in found]


async def test_a_purge_deletes_only_the_letters_kept_when_it_began() -> None:
    store = MemoryDeadLetterStore()
    await store.keep([carried(f"0-{n}").letter for n in range(MAX_PAGE + 1)])

    letters = DeadLetters(store, Courier(), GROUP)
    arrived = 0
    remove = store.remove

    async def remove_while_letters_arrive(group: str, ids: Sequence[str]) -> list[str]:
        # A letter collected while each page is deleted: the operator never saw it.
        nonlocal arrived
        arrived += 1
        await store.keep([carried(f"1-{arrived}").letter])
        return await remove(group, ids)

    store.remove = remove_while_letters_arrive  # type: ignore[method-assign]

    purged = await letters.purge_ids()

    assert len(purged) == MAX_PAGE + 1
    assert [x.transport_id for x in await letters.list()] == [f"1-{n}" for n in (1, 2)]


async def test_the_retention_deletes_only_letters_past_it_and_the_gauges_show_the_oldest() -> None:
    store = MemoryDeadLetterStore()
    await store.keep([carried(str(n)).letter for n in range(5)])
    now = datetime.now(UTC)
    for key, letter in list(store._letters.items())[:3]:  # taken in 40 days ago
        store._letters[key] = replace(letter, stored_at=now - timedelta(days=40))
    registry = CollectorRegistry()
    cleanup = DeadLetterCleanup(
        store,
        [GROUP, "order-service"],
        DeadLetterGauges(registry),
        retention_seconds=30 * 24 * 3600,
        interval=60,
        batch_size=2,
        batch_pause=0,
    )

    await cleanup.measure()
    oldest_before = registry.get_sample_value(
        "messaging_dead_letters_oldest_age_seconds", {"group": GROUP}
    )
    done = await cleanup.clean()
    await cleanup.measure()

    assert (done.deleted, done.batches) == (3, 2)
    assert [x.transport_id for x in await DeadLetters(store, Courier(), GROUP).list()] == ["3", "4"]
    assert oldest_before is not None
    assert oldest_before >= 40 * 24 * 3600 - 60
    assert registry.get_sample_value("messaging_dead_letters_kept", {"group": GROUP}) == 2
    assert (
        registry.get_sample_value("messaging_dead_letters_oldest_age_seconds", {"group": GROUP})
        < 24 * 3600
    )
    assert registry.get_sample_value("messaging_dead_letters_kept", {"group": "order-service"}) == 0
