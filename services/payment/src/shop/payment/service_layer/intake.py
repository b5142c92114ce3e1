"""Taking a gateway notification: keep it and queue its processing, in one transaction, and
nothing more. The request answers at once; the worker applies the payment afterwards, so a
gateway's timeout never depends on the payment logic."""

from __future__ import annotations

from shop.contracts import ProcessPayment
from shop.payment.domain.notifications import Notification
from shop.payment.ports import WebhookStore


async def take_notification(
    store: WebhookStore, notification: Notification, raw_body: bytes
) -> bool:
    """Keep ``notification`` and add ProcessPayment for it; a repeat changes nothing. True
    when it was new."""
    command = ProcessPayment(
        provider_event_id=notification.provider_event_id, provider=notification.provider.value
    )
    return await store.take(notification, raw_body, command)
