"""What notification-service's retention cleans: the inbox, and the sent e-mails' marks by
the time they were sent (``ix_order_notifications_sent_at``)."""

from __future__ import annotations

from shop.messaging.retention import TableRetention, deleting, inbox_retention
from shop.notification.settings import NotificationRetentionSettings


def retained_tables(settings: NotificationRetentionSettings) -> list[TableRetention]:
    return [
        inbox_retention(settings),
        TableRetention(
            "order_notifications",
            deleting("order_notifications", "sent_at"),
            settings.sent_emails,
        ),
    ]
