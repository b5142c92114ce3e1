"""The shop under fire: while orders are placed and paid at a steady rate (some left
unpaid to expire, some paid after their window, to be refunded), workers and relays (two
replicas of each worker kind) are killed with SIGKILL and restarted, others stopped with
SIGTERM, the APIs killed mid-request, the broker frozen for a while, Postgres stopped and
started again, and the e-mail provider is slow and failing throughout, hangs on a message
once and hangs up after taking one once. Once the load is done and the shop has
drained, and then been left alone a quiet spell (a late redelivery shows then), the
invariants (see :mod:`.invariants`) are read off the real databases, the SMTP sink and the
dead-letter queues, printed as a table, and must all hold.

``make test`` runs a bounded form on each bus (200 orders, 7 SIGKILLs, every other blow
once); ``make chaos`` the
full length (``SHOP_CHAOS_ORDERS``, ``SHOP_CHAOS_KILLS``, ``SHOP_CHAOS_RATE``,
``SHOP_CHAOS_TRANSPORT``: kafka or sqs; both when unset)."""

from __future__ import annotations

import asyncio
import dataclasses
import os
import time
import uuid
from pathlib import Path
from typing import Final

import asyncpg
import pytest

from shop.contracts.orders import OrderCreated
from shop.messaging.message import OutgoingMessage
from shop.messaging.testing import UNSCOPED, publish_with
from shop.ops.deadletters import list_dead_letters
from shop.ops.errors import OpsError
from shop.ops.services import consumer_groups
from shop.ops.settings import OpsSettings
from shop.simulators import gateway
from shop.simulators.mail import ProviderFaults, ProviderJournal

from .evidence import dropped_replies, evidence, handler_timeouts, timed_out_sends
from .invariants import (
    DeadLetter,
    Expectations,
    Invariant,
    Poison,
    Reading,
    blows_landed,
    check,
    check_dead_letters,
    read,
    table,
)
from .load import Load, PlannedOrder, plan_orders
from .monkey import SENDER_KIND, Monkey, schedule
from .shop import ChaosShop

ORDERS: Final = int(os.environ.get("SHOP_CHAOS_ORDERS", "200"))
KILLS: Final = int(os.environ.get("SHOP_CHAOS_KILLS", "7"))
"""Seven reach every kind once: three workers, two relay leaders, two APIs."""
RATE: Final = float(os.environ.get("SHOP_CHAOS_RATE", "4"))
"""Checkouts a second, offered whatever the shop's state (an open loop)."""
TRANSPORTS: Final = (
    (os.environ["SHOP_CHAOS_TRANSPORT"],)
    if "SHOP_CHAOS_TRANSPORT" in os.environ
    else ("kafka", "sqs")
)
"""Both buses unless one is named."""
SEED: Final = int(os.environ.get("SHOP_CHAOS_SEED", "20261204"))
FREEZE_SECONDS: Final = 12.0
"""Longer than a Kafka consumer's session (10 s): the group rebalances when it thaws."""
WRONG_AMOUNTS: Final = max(2, ORDERS // 100)
GARBAGE: Final = (b"{not json", b'{"type": "order.created", "payload": 42}')
"""Unreadable, yet text: SNS carries only UTF-8."""
DRAIN_WITHIN: Final = 180.0 + ORDERS * 0.15
QUIET_SECONDS: Final = 10.0
"""How long the shop is left alone once it looks done, before the reading that is judged."""
EMAIL_FAULTS: Final = ProviderFaults(latency=(0.02, 0.3), failure_rate=0.1)

HANDLER_TIMEOUT: Final = 5.0
"""How long the notification worker's handler may run (the provider's hang outlasts it)."""
PAYMENT_WINDOW: Final = 40
"""Seconds to pay: short, so that deadlines fall due under fire (expiries, late payments
and their refunds), yet long enough for a customer who pays at once to be in time behind
a frozen broker or a database restart."""

# Retries 20 times sooner (2 s becomes 0.1 s) so that the drain takes seconds, not minutes;
# a handler may hang 5 s (the provider's hang; its SMTP client would wait a minute); no
# traces (they would only fill the disk).
EXTRA_ENV: Final = {
    "SHOP_PAYMENT_PAYMENT_WINDOW_SECONDS": str(PAYMENT_WINDOW),
    "SHOP_PAYMENT_EXPIRY_GRACE_SECONDS": "5",
    "SHOP_NOTIFICATION_MESSAGING__HANDLER_TIMEOUT": f"{HANDLER_TIMEOUT:g}",
    "SHOP_NOTIFICATION_SMTP__TIMEOUT": "60",
    **{f"SHOP_{s}_MESSAGING__TIME_SCALE": "0.05" for s in ("ORDER", "PAYMENT", "NOTIFICATION")},
    **{f"SHOP_{s}_TRACING__EXPORTER": "none" for s in ("ORDER", "PAYMENT", "NOTIFICATION")},
}


@pytest.mark.timeout(300 + ORDERS / RATE + PAYMENT_WINDOW + DRAIN_WITHIN + QUIET_SECONDS)
@pytest.mark.parametrize("transport", TRANSPORTS)
def test_the_shop_keeps_its_promises_under_fire(transport: str, tmp_path: Path) -> None:
    shop = ChaosShop(tmp_path / "shop", transport, EXTRA_ENV)
    try:
        shop.start()
        settings = OpsSettings(_env_file=shop.workdir / "shop.env")
        invariants, figures = asyncio.run(under_fire(shop, settings))
    finally:
        shop.stop()
    report = table(invariants, figures)
    print(f"\nchaos on {transport}:\n{report}")
    (tmp_path / "chaos-report.txt").write_text(report)
    assert all(invariant.holds for invariant in invariants), report


async def under_fire(
    shop: ChaosShop, settings: OpsSettings
) -> tuple[list[Invariant], list[tuple[str, str]]]:
    order_db = shop.database_urls["order"]
    initial_stock = await enough_stock(order_db, units=ORDERS * 5)
    poison = await poison_the_bus(settings)
    orders = plan_orders(ORDERS, settings, wrong_amounts=WRONG_AMOUNTS, seed=SEED)
    load = Load(settings, orders, RATE, payment_database_url=shop.database_urls["payment"])
    monkey = Monkey(
        shop,
        load.figures,
        order_db,
        freeze_seconds=FREEZE_SECONDS,
        email_faults=EMAIL_FAULTS,
        seed=SEED,
    )
    blows = schedule(KILLS, SEED)
    load.hold_the_last(0.1, monkey.broker_frozen)

    EMAIL_FAULTS.write(shop.mail_dir)
    began = time.monotonic()
    loading = asyncio.create_task(load.run())
    await monkey.run(blows, load.progress)
    await loading
    loaded = time.monotonic()
    ProviderFaults.clear(shop.mail_dir)  # the provider recovers; what failed is retried

    for replica in shop.exited():  # none should be, but a drain needs every replica
        replica.start()
        # The dead letters are read through a worker's internal API: ready before asked.
        await shop.wait_ready(replica)
    send_blows = [evidence(site) for site in monkey.log.send_sites]
    send_blows += dropped_replies(shop.mail_dir)
    expectations = Expectations(orders, initial_stock, poison, send_blows)
    drain = await drained(shop, settings, expectations)
    # What goes wrong late (a redelivery sending an e-mail again, a payment applied twice)
    # shows only after the shop looked done: the shop is read again after a quiet spell,
    # and that reading is the one judged.
    await asyncio.sleep(QUIET_SECONDS)
    reading = await read_all(shop, settings, orders)
    monkey.log.provider_mishaps.update(e.what for e in ProviderJournal(shop.mail_dir).read())
    monkey.log.hung_sends = [
        e.message_id for e in ProviderJournal(shop.mail_dir).read() if e.what == "hung"
    ]
    sender_logs = [replica.log_path for replica in shop.of_kind(SENDER_KIND)]
    monkey.log.handler_timeouts = handler_timeouts(sender_logs)
    expectations.send_blows += timed_out_sends(sender_logs, HANDLER_TIMEOUT, monkey.log.hung_sends)
    invariants = check(reading, expectations) + blows_landed(monkey.log, load.figures, reading)
    left_in_queues = await shop.queues_not_empty()

    counts = monkey.log.counts()
    figures = [
        ("orders", f"{load.placed()} placed at {RATE:g}/s in {loaded - began:.0f} s"),
        ("blows", ", ".join(f"{what} x{n}" for what, n in sorted(counts.items()))),
        ("SIGKILLs", str(monkey.log.kills)),
        ("broker frozen", f"{monkey.log.freeze_seconds:.0f} s"),
        ("database down", f"{monkey.log.database_down:.0f} s"),
        ("provider", dict_text(monkey.log.provider_mishaps)),
        ("handler timeouts", str(monkey.log.handler_timeouts)),
        (
            "duplicates' blows",
            f"{len(send_blows)} that found sends open: "
            f"{sum(len(b.open_sends) for b in send_blows)} open",
        ),
        ("tries refused (API down)", dict_text(load.figures.refused)),
        ("tries sent", dict_text(load.figures.requests)),
        ("answered 503 (database away)", str(len(load.figures.unavailable))),
        ("e-mail provider", f"{EMAIL_FAULTS.latency} s, {EMAIL_FAULTS.failure_rate:.0%} failing"),
        (
            "drained in",
            f"{drain.drained_at - loaded:.0f} s after the load"
            if drain.drained_at is not None
            else f"not within {DRAIN_WITHIN:.0f} s",
        ),
        (
            "  waited for",
            "; ".join(f"{claim} {s:.0f} s" for claim, s in drain.waited.items()) or "nothing",
        ),
        ("  the last it waited for", "; ".join(drain.last_missing) or "nothing"),
        ("  a reading took", f"{drain.reading_took:.1f} s"),
    ]
    if shop.transport == "sqs":
        figures.append(
            (
                "queues not empty",
                ", ".join(f"{q} {v} visible, {h} hidden" for q, (v, h) in left_in_queues.items())
                or "none",
            )
        )
    figures += [(f"  {blow.at:>6.1f} s", f"{blow.what} {blow.target} {blow.detail}")
                for blow in monkey.log.blows]  # fmt: skip
    return invariants, figures


def dict_text(counts: dict[str, int]) -> str:
    return ", ".join(f"{name} {n}" for name, n in sorted(counts.items())) or "none"


async def enough_stock(order_db: str, *, units: int) -> dict[str, int]:
    """Stock enough for the whole run (no checkout refused), read as the initial stock."""
    connection = await asyncpg.connect(order_db)
    try:
        await connection.execute("UPDATE products SET stock = stock + $1", units)
        rows = await connection.fetch("SELECT sku, stock FROM products")
        return {row["sku"]: row["stock"] for row in rows}
    finally:
        await connection.close()


async def poison_the_bus(settings: OpsSettings) -> Poison:
    """Messages no consumer can read, on the topic of OrderCreated: each consumer of it
    must dead-letter them and carry on."""
    topic = UNSCOPED.topic(OrderCreated.message_type)
    await publish_with(
        settings.messaging,
        *(OutgoingMessage(topic, f"garbage-{n}", body) for n, body in enumerate(GARBAGE)),
    )
    groups = [c.group for c in consumer_groups() if topic in c.event_topics]
    return Poison(GARBAGE, tuple(groups), wrong_amount_group="payment-service")


@dataclasses.dataclass
class Drain:
    """How the shop drained after the load: where a slow drain goes."""

    drained_at: float | None = None
    """When the first reading that found everything done began (monotonic); None if none
    did in time. A reading's own length (thousands of rows and e-mails, every dead-letter
    queue scanned) is the checker's, not the shop's."""
    waited: dict[str, float] = dataclasses.field(default_factory=dict)
    """Each claim that had to wait: when the last reading that found it not yet held began,
    in seconds after the drain began."""
    last_missing: list[str] = dataclasses.field(default_factory=list)
    """A few of the things the last reading that found the shop not done waited for."""
    reading_took: float = 0.0
    """How long the last reading took."""


async def drained(shop: ChaosShop, settings: OpsSettings, expectations: Expectations) -> Drain:
    """Read the shop, its dead-letter queues with it, until what the load asked for is done
    and the poisoned messages are dead letters (or the time is up)."""
    began = time.monotonic()
    drain = Drain()
    while True:
        reading_began = time.monotonic()
        reading, letters = await asyncio.gather(
            read_shop(shop, settings, expectations.orders), read_dead_letters(settings)
        )
        reading.dead_letters = letters
        drain.reading_took = time.monotonic() - reading_began
        claims = [i for i in check(reading, expectations) if i.awaits_drain]
        claims.append(check_dead_letters(reading, expectations))
        waiting = [i for i in claims if not i.holds]
        if not waiting:
            drain.drained_at = reading_began
            return drain
        for invariant in waiting:
            drain.waited[invariant.claim] = reading_began - began
        drain.last_missing = [example for i in waiting for example in i.examples[:2]]
        if time.monotonic() > began + DRAIN_WITHIN:
            return drain
        await asyncio.sleep(2)


async def read_shop(shop: ChaosShop, settings: OpsSettings, orders: list[PlannedOrder]) -> Reading:
    """The services' databases, the SMTP sink's folder and the refunds of the orders paid
    late at the gateway (no dead letters): what a drain waits for, quick to read again."""
    reading = await read(
        shop.database_urls["order"],
        shop.database_urls["payment"],
        shop.database_urls["notification"],
        shop.mail_dir,
    )
    late = [order for order in orders if order.plan == "late"]
    reading.refunds = await read_refunds(settings.gateway_url, late)
    return reading


async def read_dead_letters(settings: OpsSettings) -> list[DeadLetter]:
    """Through each worker's internal API; a worker the monkey just restarted is asked again
    for a while (a refusal then says it is starting, not that it has no letters)."""
    deadline = time.monotonic() + 60
    while True:
        try:
            letters = await list_dead_letters(settings)
        except OpsError:
            if time.monotonic() > deadline:
                raise
            await asyncio.sleep(1)
            continue
        return [
            DeadLetter(e.group, e.message_type, e.key, e.body, f"{e.error_type}: {e.error_message}")
            for e in letters
        ]


async def read_all(shop: ChaosShop, settings: OpsSettings, orders: list[PlannedOrder]) -> Reading:
    """Everything, the refunds of every order charged at the gateway included: the reading
    that is judged."""
    reading = await read_shop(shop, settings, orders)
    reading.dead_letters = await read_dead_letters(settings)
    charged = [o for o in orders if o.plan in {"pay", "late", "wrong_amount"}]
    reading.refunds = await read_refunds(settings.gateway_url, charged)
    return reading


async def read_refunds(gateway_url: str, orders: list[PlannedOrder]) -> dict[uuid.UUID, list[int]]:
    """The refunds the gateway's ledger lists, for each of ``orders`` (each one it charged)."""
    charged = [o.id for o in orders if o.id is not None]
    limit = asyncio.Semaphore(16)

    async def refunds(order_id: uuid.UUID) -> tuple[uuid.UUID, list[int]]:
        async with limit:
            return order_id, gateway.refunds_of(await gateway.charge_of(gateway_url, order_id))

    return dict(await asyncio.gather(*(refunds(order_id) for order_id in charged)))
