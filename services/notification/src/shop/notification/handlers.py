"""What notification-service does when order events arrive: one e-mail each (each reversal of
an order's payment its own).

Not transactional: the effect (an e-mail) is outside the database, so the inbox cannot
make it happen once; :class:`Notifier` keeps its own record, written after the send.
"""

from __future__ import annotations

from typing import Any

from shop.contracts import ConsumerGroup
from shop.messaging import MessageContext, Router
from shop.messaging.subscriber import Handler
from shop.notification.domain.emails import EMAILS, OrderEmail
from shop.notification.ports import EMAIL_PROVIDER
from shop.notification.service_layer.notifier import Notifier


def build_router(notifier: Notifier, *, max_attempts: int, max_in_flight: int) -> Router:
    """A handler for each e-mail of ``domain/emails.py``, named after it, each sending its
    e-mail once through the provider."""
    router = Router(ConsumerGroup.NOTIFICATION)
    for email in EMAILS:
        router.subscriber(
            email.event,
            name=email.handler,
            transactional=False,
            max_attempts=max_attempts,
            max_in_flight=max_in_flight,
            provider=EMAIL_PROVIDER,  # each handler sends one e-mail through it
        )(_sending(notifier, email))
    return router


def _sending(notifier: Notifier, email: OrderEmail) -> Handler[Any]:
    # The notifier is asked for at each message, not at build time: a router built to be
    # documented has none to ask.
    async def send(event: Any, ctx: MessageContext) -> None:
        await notifier.send(email, event, ctx)

    return send
