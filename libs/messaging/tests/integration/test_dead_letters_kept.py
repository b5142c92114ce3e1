"""Dead letters kept in a service's own database (the ``dead_letters`` table), as its
worker keeps and serves them: thousands read a bounded page at a time along a cursor; a
purge that leaves no row and names what it deleted; a retention that deletes only what is
past it; and, on Kafka and SQS, a letter with an unreadable key collected and listed as
bad beside a good one."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import httpx
import pytest
from prometheus_client import CollectorRegistry
from sqlalchemy import func, select, text
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from shop.contracts import OrderCreated
from shop.messaging import MessageContext, MessagingSettings, Router, Worker, create_transport
from shop.messaging import headers as h
from shop.messaging.deadletter_retention import DeadLetterCleanup, DeadLetterGauges
from shop.messaging.deadletter_table import PostgresDeadLetterStore
from shop.messaging.deadletters import (
    MAX_PAGE,
    DeadLetterFilter,
    DeadLetters,
    StoredDeadLetter,
    dead_letter_headers,
    read_dead_letter,
)
from shop.messaging.internal import DEAD_LETTERS_PATH, dead_letter_routes
from shop.messaging.message import Delivery
from shop.messaging.naming import Naming
from shop.messaging.outcome import DeadLetter, Failure
from shop.messaging.schema import dead_letters
from shop.messaging.testing import eventually, operator_port, running
from shop.messaging.transports.kafka.client import KafkaClient
from shop.messaging.transports.memory import MemoryDeadLetterCourier, MemoryTransport
from shop.messaging.transports.sqs.client import SqsClient

from .conftest import messaging_settings

GROUP = "notification-service"
THOUSANDS = 3_000
FAILED_AT = datetime(2026, 12, 1, 8, 0, tzinfo=UTC)


def carried(
    number: int, *, error: str = "550 mailbox unavailable", **bad: str
) -> tuple[bytes, dict[str, str], str]:
    """A dead letter as a consumer writes it to the broker (body, headers, key), its keys
    overridden by ``bad``."""
    delivery = Delivery(
        f'{{"order": {number}, "customer_email": "ayu@example.com"}}'.encode(),
        {h.MESSAGE_TYPE: "order.created"},
        "shop-order-created",
        key=f"order-{number}",
    )
    outcome = DeadLetter(Failure("PermanentError", error), 1, FAILED_AT, FAILED_AT)
    return delivery.body, {**dead_letter_headers(GROUP, delivery, outcome), **bad}, delivery.key


def letter(number: int, *, error: str = "550 mailbox unavailable") -> StoredDeadLetter:
    body, stored, key = carried(number, error=error)
    return read_dead_letter(f"0-{number}", body, stored, key=key)


def no_courier() -> MemoryDeadLetterCourier:
    return MemoryTransport().dead_letter_courier


@pytest.fixture
def store(sessions: async_sessionmaker[AsyncSession]) -> PostgresDeadLetterStore:
    return PostgresDeadLetterStore(sessions)


async def rows(sessions: async_sessionmaker[AsyncSession]) -> int:
    async with sessions() as session:
        return int((await session.execute(select(func.count()).select_from(dead_letters))).one()[0])


async def test_thousands_of_letters_are_read_a_bounded_page_at_a_time_along_a_cursor(
    store: PostgresDeadLetterStore,
) -> None:
    for start in range(0, THOUSANDS, 500):
        await store.keep([letter(n) for n in range(start, start + 500)])
    await store.keep([letter(THOUSANDS, error="451 try again later")])
    letters = DeadLetters(store, no_courier(), GROUP)

    seen: list[str] = []
    cursors: list[int] = []
    after: str | None = None
    while True:
        page = await letters.page(after=after, limit=MAX_PAGE)
        assert len(page.letters) <= MAX_PAGE
        seen += [x.transport_id for x in page.letters]
        if page.next_after is None:
            break
        assert page.next_after == page.letters[-1].id
        cursors.append(int(page.next_after))
        after = page.next_after

    assert seen == [f"0-{n}" for n in range(THOUSANDS + 1)]  # each once, oldest first
    assert len(cursors) == THOUSANDS // MAX_PAGE  # 15 full pages, then the short last
    assert cursors == sorted(set(cursors))
    only = await letters.page(DeadLetterFilter(error_contains="TRY AGAIN"), limit=10)
    assert ([x.transport_id for x in only.letters], only.next_after) == ([f"0-{THOUSANDS}"], None)
    in_time = await letters.page(
        DeadLetterFilter(since=FAILED_AT, until=FAILED_AT + timedelta(seconds=1)), limit=5
    )
    assert len(in_time.letters) == 5
    assert in_time.next_after is not None
    assert (await letters.page(DeadLetterFilter(until=FAILED_AT), limit=5)).letters == []


async def test_the_internal_api_pages_and_refuses_a_page_too_large_or_a_cursor_it_never_gave(
    store: PostgresDeadLetterStore,
) -> None:
    await store.keep([letter(n) for n in range(5)])
    routes = dead_letter_routes(lambda group: DeadLetters(store, no_courier(), group), [GROUP])
    async with operator_port(routes) as url, httpx.AsyncClient(base_url=url) as client:
        first = (await client.get(DEAD_LETTERS_PATH, params={"group": GROUP, "limit": 2})).json()
        rest = (
            await client.get(
                DEAD_LETTERS_PATH, params={"group": GROUP, "after": first["next_after"]}
            )
        ).json()
        too_many = await client.get(DEAD_LETTERS_PATH, params={"limit": MAX_PAGE + 1})
        foreign = await client.get(DEAD_LETTERS_PATH, params={"after": "0-3"})
        untimely = await client.get(DEAD_LETTERS_PATH, params={"since": "yesterday"})

    assert [x["key"] for x in first["dead_letters"]] == ["order-0", "order-1"]
    assert [x["key"] for x in rest["dead_letters"]] == ["order-2", "order-3", "order-4"]
    assert rest["next_after"] is None
    assert too_many.status_code == 400
    assert "limit must be between 1 and 200" in too_many.json()["detail"]
    assert foreign.status_code == 400
    assert "not a cursor" in foreign.json()["detail"]
    assert untimely.status_code == 400
    assert "since" in untimely.json()["detail"]


async def test_a_letter_whose_numbers_no_column_holds_is_kept_as_bad_beside_the_others(
    store: PostgresDeadLetterStore,
) -> None:
    # A foreign producer's header: a whole number, but past what the table's columns hold.
    huge = str(2**64)
    body, stored, key = carried(1, **{h.DEAD_LETTER_BODY_SIZE: huge, h.DEAD_LETTER_ATTEMPTS: huge})
    bad = read_dead_letter("0-1", body, stored, key=key)

    assert await store.keep([bad, letter(2)]) == 2
    kept = await DeadLetters(store, no_courier(), GROUP).list()
    assert [x.transport_id for x in kept] == ["0-1", "0-2"]
    assert kept[0].problems == (
        f"x-dead-letter-attempts={huge} is out of range",
        f"x-dead-letter-body-size={huge} is out of range",
    )
    assert kept[0].body == body, "kept whole: its size said nothing it could be cut to"


async def test_a_page_bounded_to_the_letters_kept_by_then_leaves_out_later_ones(
    store: PostgresDeadLetterStore,
) -> None:
    assert await store.newest(GROUP) is None
    await store.keep([letter(n) for n in range(3)])
    newest = await store.newest(GROUP)
    await store.keep([letter(3)])

    bounded = await store.page(GROUP, DeadLetterFilter(kept_through=newest), after=None, limit=10)

    assert [x.transport_id for x in bounded.letters] == ["0-0", "0-1", "0-2"]
    assert await store.newest("another-group") is None


async def test_a_purge_leaves_no_row_of_a_letter_and_names_each_one_it_deleted(
    store: PostgresDeadLetterStore, sessions: async_sessionmaker[AsyncSession]
) -> None:
    await store.keep([letter(n) for n in range(3)])
    await store.keep([letter(3, error="451 try again later")])
    routes = dead_letter_routes(lambda group: DeadLetters(store, no_courier(), group), [GROUP])
    kept = {x.transport_id: x.id for x in await DeadLetters(store, no_courier(), GROUP).list()}
    async with operator_port(routes) as url, httpx.AsyncClient(base_url=url) as client:
        one = await client.post(f"{DEAD_LETTERS_PATH}/{GROUP}/{kept['0-0']}/purge")
        again = await client.post(f"{DEAD_LETTERS_PATH}/{GROUP}/{kept['0-0']}/purge")
        matching = await client.post(
            f"{DEAD_LETTERS_PATH}/{GROUP}/purge", params={"error_contains": "mailbox"}
        )
        nothing_left = await client.post(
            f"{DEAD_LETTERS_PATH}/{GROUP}/purge", params={"error_contains": "mailbox"}
        )

    assert one.json() == {"group": GROUP, "purged": [kept["0-0"]], "count": 1}
    assert again.status_code == 404
    newest = kept["0-3"]  # the bound each purge took: what was kept when it began
    assert matching.json() == {
        "group": GROUP,
        "purged": [kept["0-1"], kept["0-2"]],
        "count": 2,
        "kept_through": newest,
    }
    assert nothing_left.json() == {
        "group": GROUP,
        "purged": [],
        "count": 0,
        "kept_through": newest,
    }
    async with sessions() as session:
        left = (await session.execute(select(dead_letters.c.transport_id))).scalars().all()
        bodies = await session.execute(
            text(
                "SELECT count(*) FROM dead_letters "
                "WHERE position(convert_to('ayu@example.com', 'UTF8') IN body) > 0"
            )
        )
    assert left == ["0-3"]
    assert bodies.one()[0] == 1  # only the letter not purged still holds the address


async def test_the_retention_deletes_only_letters_kept_longer_than_it(
    store: PostgresDeadLetterStore, sessions: async_sessionmaker[AsyncSession]
) -> None:
    await store.keep([letter(n) for n in range(7)])
    async with sessions.begin() as session:  # five of them were taken in 200 days ago
        await session.execute(
            text(
                "UPDATE dead_letters SET stored_at = now() - interval '200 days' "
                "WHERE transport_id = ANY(:old)"
            ),
            {"old": [f"0-{n}" for n in range(5)]},
        )
    registry = CollectorRegistry()
    cleanup = DeadLetterCleanup(
        store,
        [GROUP],
        DeadLetterGauges(registry),
        retention_seconds=180 * 24 * 3600,
        interval=3600,
        batch_size=2,
        batch_pause=0,
    )

    done = await cleanup.clean()
    await cleanup.measure()

    assert (done.deleted, done.batches) == (5, 3)
    async with sessions() as session:
        left = (await session.execute(select(dead_letters.c.transport_id))).scalars().all()
    assert sorted(left) == ["0-5", "0-6"]
    assert await rows(sessions) == 2
    assert registry.get_sample_value("messaging_dead_letters_kept", {"group": GROUP}) == 2
    oldest = registry.get_sample_value(
        "messaging_dead_letters_oldest_age_seconds", {"group": GROUP}
    )
    assert oldest is not None
    assert oldest < 24 * 3600


@pytest.mark.parametrize("kind", ["kafka", "sqs"])
async def test_a_letter_with_an_unreadable_key_is_collected_and_listed_as_bad_beside_a_good_one(
    kind: str,
    unique_name: str,
    request: pytest.FixtureRequest,
    sessions: async_sessionmaker[AsyncSession],
) -> None:
    settings = messaging_settings(kind, unique_name, request)
    router = Router(GROUP)

    @router.subscriber(OrderCreated, transactional=False)
    async def never_called(event: OrderCreated, ctx: MessageContext) -> None:
        raise AssertionError("nothing is published to the consumer here")

    worker = Worker(
        settings,
        create_transport(settings),
        routers=[router],
        health_port=0,
        dead_letter_store=PostgresDeadLetterStore(sessions),
    )
    async with running(worker):
        assert worker.health is not None
        await put_on_the_broker(
            settings, [carried(1), carried(2, **{h.DEAD_LETTER_ATTEMPTS: "x"}), carried(3)]
        )
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{worker.health.port}") as client:
            listed: list[dict[str, object]] = []

            async def all_three() -> bool:
                nonlocal listed
                answer = await client.get(DEAD_LETTERS_PATH, params={"group": GROUP})
                listed = answer.json()["dead_letters"]
                return len(listed) == 3

            await eventually(all_three, within=90, what="three dead letters collected")

    by_key = {x["key"]: x for x in listed}
    assert [by_key[f"order-{n}"]["malformed"] for n in (1, 2, 3)] == [False, True, False]
    assert by_key["order-2"]["problems"] == ["x-dead-letter-attempts='x' is not a whole number"]
    assert by_key["order-2"]["error_message"] == "550 mailbox unavailable"
    assert by_key["order-1"]["attempts"] == 1


async def put_on_the_broker(
    settings: MessagingSettings, letters: list[tuple[bytes, dict[str, str], str]]
) -> None:
    """Write letters straight onto the group's dead-letter topic or queue, as a consumer
    (or a foreign producer) would."""
    naming = Naming(settings.namespace)
    if settings.transport == "kafka":
        kafka = KafkaClient(settings.kafka)
        await kafka.start()
        try:
            for body, stored, key in letters:
                await kafka.send(naming.dead_letters(GROUP), body, stored, key)
        finally:
            await kafka.close()
        return
    sqs = SqsClient(settings.sqs)
    await sqs.start()
    try:
        url = await sqs.queue_url(naming.dead_letters(GROUP))
        for body, stored, key in letters:
            await sqs.send(url, body.decode(), stored, key)
    finally:
        await sqs.close()
