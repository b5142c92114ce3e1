"""Gateway notifications in ``payment_events``: the Postgres side of
:class:`shop.payment.ports.WebhookStore`.

The webhook must answer fast, so taking a notification is ONE statement on the driver's
connection, its own transaction: the event row, and only if it is new, its ProcessPayment
in the outbox with the NOTIFY that wakes the relay. One round trip, where a session would
take four (begin, two inserts, commit); ``make bench-webhook`` measures it.
"""

from __future__ import annotations

import json

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from shop.contracts import Contract
from shop.database.driver import driver_connection
from shop.messaging.outbox import OUTBOX_COLUMNS, new_envelope, outbox_row
from shop.messaging.schema import OUTBOX_CHANNEL
from shop.payment.domain.notifications import Notification

# Each notification once (the UNIQUE (provider, provider_event_id) decides, even between
# concurrent requests); its command only with a new one.
_TAKE = f"""
WITH kept AS (
    INSERT INTO payment_events (provider, provider_event_id, type, raw_body, meaning, order_id,
                                amount, currency, provider_payment_id)
    VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
    ON CONFLICT DO NOTHING RETURNING id),
queued AS (
    INSERT INTO outbox ({OUTBOX_COLUMNS})
    SELECT $10, $11, $12, $13::jsonb, $14, NULL FROM kept
    RETURNING pg_notify('{OUTBOX_CHANNEL}', ''))
SELECT count(*) FROM queued"""


class AsyncpgWebhookStore:
    def __init__(self, engine: AsyncEngine) -> None:
        self.engine = engine

    async def take(self, notification: Notification, raw_body: bytes, command: Contract) -> bool:
        # Stamped with the request's trace, as add() would.
        row = outbox_row(new_envelope(command, key=str(notification.order_id)))
        async with driver_connection(self.engine) as connection:
            queued = await connection.fetchval(
                _TAKE,
                notification.provider.value,
                notification.provider_event_id,
                notification.type,
                raw_body,
                notification.meaning.value,
                notification.order_id,
                notification.amount,
                notification.currency,
                notification.provider_payment_id,
                row["event_id"],
                row["key"],
                row["message_type"],
                json.dumps(row["headers"]),
                row["body"],
            )
        return bool(queued)

    async def check(self) -> None:
        async with self.engine.connect() as connection:
            await connection.execute(text("SELECT 1"))
