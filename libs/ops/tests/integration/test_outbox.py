"""Each publishing service's outbox, read through its internal API from rows seeded as the
relay keeps them."""

from __future__ import annotations

import json
import uuid

import asyncpg

from shop.messaging.schema import metadata as messaging_metadata
from shop.ops.outbox import OutboxStatus, outbox_status

from .conftest import create_all, reading

_ROW = """
    INSERT INTO outbox (event_id, key, message_type, headers, body, created_at, published_at,
                        due_at)
    VALUES ($1, 'order-1', 'order.created', $2::jsonb, 'body',
            now() - make_interval(secs => $3::float8),
            CASE WHEN $4::boolean THEN now() END,
            now() + make_interval(secs => $5::float8))
"""


async def add_rows(url: str, *, unsent_ages: list[float], scheduled: int, sent: int) -> None:
    """Rows due now (``unsent_ages`` seconds old), due in 30 minutes, and sent; and one
    scheduled row that fell due 90 seconds ago (a row to send now, as old as it is overdue)."""
    rows: list[tuple[float, bool, float | None]] = [
        *((age, False, None) for age in unsent_ages),
        *((0.0, False, 1800.0) for _ in range(scheduled)),
        (3600.0, False, -90.0),
        *((10.0, True, None) for _ in range(sent)),
    ]
    headers = json.dumps({"x-message-type": "order.created"})
    connection = await asyncpg.connect(url)
    try:
        for age, published, due_in in rows:
            await connection.execute(_ROW, uuid.uuid4(), headers, age, published, due_in)
    finally:
        await connection.close()


async def test_each_outbox_tells_its_backlog_its_oldest_row_its_schedule_and_what_it_keeps(
    service_databases: dict[str, str], internal_apis: dict[str, str]
) -> None:
    for service in ("order-service", "payment-service"):
        await create_all(service_databases[service], [messaging_metadata])
    await add_rows(service_databases["order-service"], unsent_ages=[5, 40], scheduled=3, sent=4)
    await add_rows(service_databases["payment-service"], unsent_ages=[], scheduled=0, sent=1)
    # notification-service has no outbox: it is never asked.
    settings = reading(internal_apis | {"notification-service": "http://127.0.0.1:1"})

    order, payment = await outbox_status(settings)

    assert (order.service, order.unsent, order.scheduled, order.sent_kept) == (
        "order-service",
        3,
        3,
        4,
    )
    assert 90 <= order.oldest_unsent_age_seconds < 120
    assert payment.service == "payment-service"
    assert (payment.unsent, payment.scheduled, payment.sent_kept) == (1, 0, 1)


async def test_an_empty_outbox_has_no_backlog_and_no_age(
    service_databases: dict[str, str], internal_apis: dict[str, str]
) -> None:
    for service in ("order-service", "payment-service"):
        await create_all(service_databases[service], [messaging_metadata])
    assert await outbox_status(reading(internal_apis)) == [
        OutboxStatus("order-service", 0, 0.0, 0, 0),
        OutboxStatus("payment-service", 0, 0.0, 0, 0),
    ]
