"""The shop under fire: while orders are placed and paid at a steady rate, workers and
relays (two replicas of each worker kind) are killed with SIGKILL and restarted, others
stopped with SIGTERM, the APIs killed mid-request, the broker frozen for a while, and the
e-mail provider is slow and failing throughout. Once the load is done and the shop has
drained, and then been left alone a quiet spell (a late redelivery shows then), the
invariants (see :mod:`.invariants`) are read off the real databases, the SMTP sink and the
dead-letter queues, printed as a table, and must all hold.

``make test`` runs a bounded form (200 orders, 7 SIGKILLs, one freeze); ``make chaos`` the
full length (``SHOP_CHAOS_ORDERS``, ``SHOP_CHAOS_KILLS``, ``SHOP_CHAOS_RATE``,
``SHOP_CHAOS_TRANSPORT``: kafka or sqs)."""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path
from typing import Final

import asyncpg
import pytest

from shop.contracts.orders import OrderCreated
from shop.messaging.message import OutgoingMessage
from shop.messaging.testing import UNSCOPED, publish_with
from shop.ops.deadletters import list_dead_letters
from shop.ops.services import consumer_groups
from shop.ops.settings import OpsSettings
from shop.simulators.mail import ProviderFaults

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
from .load import Load, plan_orders
from .monkey import Monkey, schedule
from .shop import ChaosShop

ORDERS: Final = int(os.environ.get("SHOP_CHAOS_ORDERS", "200"))
KILLS: Final = int(os.environ.get("SHOP_CHAOS_KILLS", "7"))
"""Seven reach every kind once: three workers, two relay leaders, two APIs."""
RATE: Final = float(os.environ.get("SHOP_CHAOS_RATE", "4"))
"""Checkouts a second, offered whatever the shop's state (an open loop)."""
TRANSPORT: Final = os.environ.get("SHOP_CHAOS_TRANSPORT", "kafka")
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

# Retries 20 times sooner (2 s becomes 0.1 s) so that the drain takes seconds, not minutes;
# the window to pay is an hour, so that no order expires during the run (e2e covers that);
# no traces (they would only fill the disk).
EXTRA_ENV: Final = {
    "SHOP_PAYMENT_PAYMENT_WINDOW_SECONDS": "3600",
    **{f"SHOP_{s}_MESSAGING__TIME_SCALE": "0.05" for s in ("ORDER", "PAYMENT", "NOTIFICATION")},
    **{f"SHOP_{s}_TRACING__EXPORTER": "none" for s in ("ORDER", "PAYMENT", "NOTIFICATION")},
}


@pytest.mark.timeout(300 + ORDERS / RATE + DRAIN_WITHIN + QUIET_SECONDS)
def test_the_shop_keeps_its_promises_under_fire(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    shop = ChaosShop(tmp_path / "shop", TRANSPORT, EXTRA_ENV)
    try:
        shop.start()
        monkeypatch.setenv("SHOP_OPS_ENV_FILE", str(shop.workdir / "shop.env"))
        invariants, figures = asyncio.run(under_fire(shop, OpsSettings()))
    finally:
        shop.stop()
    report = table(invariants, figures)
    print(f"\nchaos on {TRANSPORT}:\n{report}")
    (tmp_path / "chaos-report.txt").write_text(report)
    assert all(invariant.holds for invariant in invariants), report


async def under_fire(
    shop: ChaosShop, settings: OpsSettings
) -> tuple[list[Invariant], list[tuple[str, str]]]:
    order_db = settings.order_database_url
    initial_stock = await enough_stock(order_db, units=ORDERS * 5)
    poison = await poison_the_bus(settings)
    orders = plan_orders(ORDERS, settings, wrong_amounts=WRONG_AMOUNTS, seed=SEED)
    load = Load(settings, orders, RATE)
    monkey = Monkey(shop, load.figures, order_db, freeze_seconds=FREEZE_SECONDS, seed=SEED)
    blows = schedule(KILLS, SEED)

    EMAIL_FAULTS.write(shop.mail_dir)
    began = time.monotonic()
    loading = asyncio.create_task(load.run())
    await monkey.run(blows, load.progress)
    await loading
    loaded = time.monotonic()
    ProviderFaults.clear(shop.mail_dir)  # the provider recovers; what failed is retried

    for replica in shop.exited():  # none should be, but a drain needs every replica
        replica.start()
    expectations = Expectations(orders, initial_stock, poison, monkey.log.send_kills)
    await drained(shop, settings, expectations)
    done = time.monotonic()
    # What goes wrong late (a redelivery sending an e-mail again, a payment applied twice)
    # shows only after the shop looked done: the shop is read again after a quiet spell,
    # and that reading is the one judged.
    await asyncio.sleep(QUIET_SECONDS)
    reading = await read_all(shop, settings)
    invariants = check(reading, expectations) + blows_landed(monkey.log, load.figures, reading)

    counts = monkey.log.counts()
    figures = [
        ("orders", f"{load.placed()} placed at {RATE:g}/s in {loaded - began:.0f} s"),
        ("blows", ", ".join(f"{what} x{n}" for what, n in sorted(counts.items()))),
        ("SIGKILLs", str(monkey.log.kills)),
        ("broker frozen", f"{monkey.log.freeze_seconds:.0f} s"),
        ("tries refused (API down)", dict_text(load.figures.refused)),
        ("tries sent", dict_text(load.figures.requests)),
        ("e-mail provider", f"{EMAIL_FAULTS.latency} s, {EMAIL_FAULTS.failure_rate:.0%} failing"),
        ("drained in", f"{done - loaded:.0f} s after the load"),
    ]
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


async def drained(shop: ChaosShop, settings: OpsSettings, expectations: Expectations) -> None:
    """Read the shop until what the load asked for is done (or the time is up), then its
    dead-letter queues until the poisoned messages are there (or the time is up)."""
    deadline = time.monotonic() + DRAIN_WITHIN
    while True:
        reading = await read_shop(shop, settings)
        waiting = [i for i in check(reading, expectations) if not i.holds and i.awaits_drain]
        if not waiting or time.monotonic() > deadline:
            break
        await asyncio.sleep(2)
    while True:
        reading.dead_letters = await read_dead_letters(settings)
        if check_dead_letters(reading, expectations).holds or time.monotonic() > deadline:
            return
        await asyncio.sleep(2)


async def read_shop(shop: ChaosShop, settings: OpsSettings) -> Reading:
    """The services' databases and the SMTP sink's folder (no dead letters)."""
    return await read(
        settings.order_database_url,
        settings.payment_database_url,
        settings.notification_database_url,
        shop.mail_dir,
    )


async def read_dead_letters(settings: OpsSettings) -> list[DeadLetter]:
    return [
        DeadLetter(e.group, e.message_type, e.key, e.body, f"{e.error_type}: {e.error_message}")
        for e in await list_dead_letters(settings)
    ]


async def read_all(shop: ChaosShop, settings: OpsSettings) -> Reading:
    reading = await read_shop(shop, settings)
    reading.dead_letters = await read_dead_letters(settings)
    return reading
