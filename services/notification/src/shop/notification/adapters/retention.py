"""What notification-service's retention cleans: the sent e-mails' marks, by the time they
were sent (``ix_order_notifications_sent_at``). It keeps no inbox."""

from __future__ import annotations

from shop.messaging.retention import TableRetention, deleting
from shop.notification.settings import NotificationRetentionSettings


def retained_tables(settings: NotificationRetentionSettings) -> list[TableRetention]:
    return [
        TableRetention(
            "order_notifications",
            deleting("order_notifications", "sent_at"),
            settings.sent_emails,
        ),
    ]
