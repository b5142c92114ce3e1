"""What order-service's retention cleans: the inbox, and the idempotency keys by the time
they were claimed (``ix_idempotency_keys_created_at``)."""

from __future__ import annotations

from shop.messaging.retention import TableRetention, deleting, inbox_retention
from shop.order.settings import OrderRetentionSettings


def retained_tables(settings: OrderRetentionSettings) -> list[TableRetention]:
    return [
        inbox_retention(settings),
        TableRetention(
            "idempotency_keys",
            deleting("idempotency_keys", "created_at"),
            settings.idempotency_keys,
        ),
    ]
