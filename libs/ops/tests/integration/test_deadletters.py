"""Dead letters of two consumer groups, on each transport, asked of the workers' ports
(served as the workers serve them, on the real broker): listed with their group and
service, filtered, shown, redriven (one, and all of a group) and purged."""

from __future__ import annotations

import uuid

import pytest

from shop.contracts import encode
from shop.messaging import MessagingSettings, Naming
from shop.ops.deadletters import (
    DeadLetterQuery,
    GroupCount,
    list_dead_letters,
    purge_dead_letters,
    redrive_dead_letter,
    redrive_dead_letters,
    show_dead_letter,
)
from shop.ops.errors import OpsError
from shop.ops.lag import ConsumerLag, consumer_lag
from shop.ops.settings import OpsSettings

from .conftest import (
    Seeded,
    add_dead_letters,
    declare,
    order_created,
    order_paid,
    reading,
    worker_ports,
)

PAYMENT = "payment-service"
NOTIFICATION = "notification-service"


def waiting_for(lags: list[ConsumerLag], group: str, source: str) -> int:
    return sum(lag.waiting for lag in lags if lag.group == group and lag.source == source)


async def test_dead_letters_across_groups_are_listed_shown_redriven_and_purged(
    messaging: MessagingSettings,
) -> None:
    naming = Naming(messaging.namespace)
    unpaid, bounced, slow = uuid.uuid4(), uuid.uuid4(), uuid.uuid4()
    # Every worker declares its own groups when it starts.
    await declare(messaging, PAYMENT, NOTIFICATION, "order-service")
    created = order_created(unpaid)
    await add_dead_letters(
        messaging,
        Seeded(PAYMENT, created, "PermanentError", "no stock left"),
        Seeded(
            NOTIFICATION,
            order_created(bounced),
            "EmailRejected",
            "550 5.1.1 <bounce@example.com>: mailbox unavailable",
        ),
        Seeded(
            NOTIFICATION,
            order_paid(slow),
            "EmailUnavailable",
            "451 4.3.0 temporary failure, try again later",
            attempts=8,
        ),
    )
    async with worker_ports(messaging, dead_letters=3) as urls:
        settings = reading(urls, messaging)
        letters = await list_dead_letters(settings)
        assert sorted((x.service, x.group, x.key, x.message_type) for x in letters) == sorted(
            [
                (PAYMENT, PAYMENT, str(unpaid), "order.created"),
                (NOTIFICATION, NOTIFICATION, str(bounced), "order.created"),
                (NOTIFICATION, NOTIFICATION, str(slow), "order.paid"),
            ]
        )
        payment_letter = next(x for x in letters if x.group == PAYMENT)
        assert payment_letter.body == encode(created)  # byte for byte
        assert (payment_letter.error_type, payment_letter.error_message) == (
            "PermanentError",
            "no stock left",
        )

        # The filters themselves are tried in the unit tests; here, that they reach the groups.
        by_service = await list_dead_letters(
            settings, DeadLetterQuery(service=NOTIFICATION, contains="MAILBOX unavailable")
        )
        assert [x.key for x in by_service] == [str(bounced)]
        bounced_letter = by_service[0]
        assert (
            await show_dead_letter(settings, bounced_letter.id, group=NOTIFICATION)
            == bounced_letter
        )
        with pytest.raises(OpsError, match="no dead letter"):
            await show_dead_letter(settings, "no-such-letter", group=PAYMENT)

        # One letter back to the consumer that failed it, and to it alone.
        redriven = await redrive_dead_letter(settings, bounced_letter.id, group=NOTIFICATION)
        assert redriven.key == str(bounced)
        left = await list_dead_letters(settings)
        assert {x.key for x in left} == {str(unpaid), str(slow)}
        if messaging.transport == "kafka":
            back_in = naming.delay_topic(NOTIFICATION, 0)
            elsewhere = naming.delay_topic(PAYMENT, 0)
        else:
            back_in, elsewhere = naming.queue(NOTIFICATION), naming.queue(PAYMENT)
        lags = await consumer_lag(settings)
        assert waiting_for(lags, NOTIFICATION, back_in) == 1
        assert waiting_for(lags, PAYMENT, elsewhere) == 0

        # All of one group's letters, at a bounded rate.
        counts = await redrive_dead_letters(settings, DeadLetterQuery(group=PAYMENT), per_second=50)
        assert counts == [GroupCount(PAYMENT, PAYMENT, 1)]
        assert waiting_for(await consumer_lag(settings), PAYMENT, elsewhere) == 1

        # Purging what matches leaves nothing behind, in any group.
        purged = await purge_dead_letters(settings, DeadLetterQuery(error_type="EmailUnavailable"))
        assert purged == [
            GroupCount("notification-service", NOTIFICATION, 1),
            GroupCount("order-service", "order-service", 0),
            GroupCount(PAYMENT, PAYMENT, 0),
        ]
        assert await list_dead_letters(settings) == []


async def test_a_group_nobody_runs_is_refused_by_name() -> None:
    settings = OpsSettings(environment="test")
    with pytest.raises(OpsError, match="no consumer group matches"):
        await list_dead_letters(settings, DeadLetterQuery(group="stock-service"))
