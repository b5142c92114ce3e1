"""What payment-service's retention cleans: the inbox, and the raw bodies of processed
notifications, by the time they were processed (``ix_payment_events_raw_body_kept``). The
notifications' rows stay (see :class:`shop.payment.settings.PaymentRetentionSettings`)."""

from __future__ import annotations

from shop.messaging.retention import TableRetention, inbox_retention
from shop.payment.settings import PaymentRetentionSettings

# One batch, in the shape of shop.messaging.retention.deleting: $1 where the previous batch
# ended, $2 the cutoff, $3 the batch's size. A flagged payment's notifications keep their
# bodies: a person is to look at them.
CLEAR_RAW_BODIES = """
    WITH cleared AS (
        UPDATE payment_events SET raw_body = NULL WHERE ctid = ANY(ARRAY(
            SELECT event.ctid FROM payment_events AS event
            WHERE event.raw_body IS NOT NULL
              AND event.processed_at >= $1 AND event.processed_at < $2
              AND NOT EXISTS (
                  SELECT FROM payments
                  WHERE payments.order_id = event.order_id AND payments.flagged IS NOT NULL)
            ORDER BY event.processed_at
            LIMIT $3))
        RETURNING processed_at)
    SELECT count(*), max(processed_at) FROM cleared
"""


def retained_tables(settings: PaymentRetentionSettings) -> list[TableRetention]:
    return [
        inbox_retention(settings),
        TableRetention("payment_events.raw_body", CLEAR_RAW_BODIES, settings.raw_bodies),
    ]
