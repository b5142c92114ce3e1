"""The e-mail provider away for longer than the whole retry schedule, under a stream of
orders: its circuit breaker holds the e-mails back instead of spending their attempts, and
every one goes, once, soon after the provider is back. On real Postgres, the
Kafka-protocol broker and the SMTP sink (refusing every message while it is "down").

The outage is ten minutes against the retry schedule's four, in the suite's scaled time
(``time_scale`` 0.01: 6 s against 2.5 s); ``SHOP_OUTAGE_SECONDS``,
``SHOP_OUTAGE_TIME_SCALE`` and ``SHOP_OUTAGE_ORDERS`` run it at full length."""

from __future__ import annotations

import asyncio
import os
import time
from typing import Any, Final

from shop.contracts import OrderCreated
from shop.devstack import SmtpSink
from shop.messaging.testing import eventually, running
from shop.notification.bootstrap import build_worker
from shop.notification.settings import NotificationSettings
from shop.simulators.mail import ProviderFaults

TIME_SCALE: Final = float(os.environ.get("SHOP_OUTAGE_TIME_SCALE", "0.01"))
OUTAGE: Final = float(os.environ.get("SHOP_OUTAGE_SECONDS", str(600 * TIME_SCALE)))
ORDERS: Final = int(os.environ.get("SHOP_OUTAGE_ORDERS", "400"))
"""The suite sends 400 (each a real e-mail once the provider is back); 1,000 and more with
``SHOP_OUTAGE_ORDERS``."""
BACK_WITHIN: Final = 60.0
"""Real seconds from the provider's return to the last e-mail (not scaled: sending a
few hundred e-mails takes what it takes)."""


def sample(worker: Any, name: str, **labels: str) -> float:
    return worker.metrics.registry.get_sample_value(name, labels) or 0.0


async def test_a_provider_outage_longer_than_the_retries_loses_no_email_and_sends_each_once(
    notification_settings: NotificationSettings,
    bus: Any,
    order_event: Any,
    smtp_sink: SmtpSink,
    recorded: Any,
) -> None:
    assert smtp_sink.mail_dir is not None
    settings = notification_settings.model_copy(
        update={
            "messaging": notification_settings.messaging.model_copy(
                update={"time_scale": TIME_SCALE}
            )
        }
    )
    orders = [order_event(OrderCreated) for _ in range(ORDERS)]
    worker = build_worker(settings, health_port=0)
    dead_letters = worker.dead_letters("notification-service")
    ProviderFaults(failure_rate=1.0).write(smtp_sink.mail_dir)  # the provider goes down
    async with running(worker):
        await bus.publish(*orders[: ORDERS // 2])
        await asyncio.sleep(OUTAGE / 2)
        await bus.publish(*orders[ORDERS // 2 :])  # the orders keep coming meanwhile
        await asyncio.sleep(OUTAGE / 2)
        refused_while_down = smtp_sink.refused
        state_while_down = sample(worker, "messaging_breaker_state", provider="smtp")
        ProviderFaults().write(smtp_sink.mail_dir)  # and comes back
        back_at = time.monotonic()
        await smtp_sink.wait_for_async(ORDERS, within=BACK_WITHIN)
        all_sent_after = time.monotonic() - back_at

        async def all_recorded() -> bool:
            return len(await recorded()) == ORDERS

        await eventually(all_recorded, within=30, what="every e-mail recorded")
        await asyncio.sleep(1)  # time for a late second copy to show
        letters = await dead_letters.list()

    transitions = {
        state: sample(worker, "messaging_breaker_transitions_total", provider="smtp", state=state)
        for state in ("open", "half_open", "closed")
    }
    print(
        f"\noutage {OUTAGE:g} s (time scale {TIME_SCALE:g}): {refused_while_down} tries refused "
        f"for {ORDERS} orders; all {ORDERS} e-mails sent {all_sent_after:.1f} s after the "
        f"provider came back; {len(letters)} dead letters; breaker transitions {transitions}"
    )
    message_ids = [mail.message["Message-ID"] for mail in smtp_sink.messages]
    assert len(message_ids) == ORDERS
    assert len(set(message_ids)) == ORDERS, "an e-mail went twice"
    assert sorted(await recorded()) == sorted(
        (order.payload.order_id, "order_confirmation") for order in orders
    )
    assert letters == []
    assert sample(worker, "messaging_dead_lettered_total") == 0
    # The breaker held the e-mails back: the provider saw a few tries, not one per attempt
    # of every message (hundreds of messages, each with several attempts).
    assert state_while_down != 0  # open, or half-open with a probe out
    # Before it opens, the tries already in flight reach the provider too, as many as the
    # scheduling lets start: 28 to 43 of 400 in the suite, 40 of 1,000 at full length;
    # without the breaker, 2,139 in 30 s.
    assert refused_while_down < ORDERS / 4
    assert all(transitions.values()), transitions
    assert sample(worker, "messaging_breaker_state", provider="smtp") == 0
