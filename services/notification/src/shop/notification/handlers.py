"""What notification-service does when order events arrive: one e-mail each (each reversal of
an order's payment its own).

Not transactional: the effect (an e-mail) is outside the database, so the inbox cannot
make it happen once; :class:`Notifier` keeps its own record, written after the send.
"""

from __future__ import annotations

from functools import partial

from shop.contracts import (
    ConsumerGroup,
    OrderCancelled,
    OrderCreated,
    OrderPaid,
    OrderPaymentReversed,
)
from shop.messaging import MessageContext, Router
from shop.notification.ports import EMAIL_PROVIDER
from shop.notification.service_layer.notifier import Notifier


def build_router(notifier: Notifier, *, max_attempts: int, max_in_flight: int) -> Router:
    router = Router(ConsumerGroup.NOTIFICATION)
    subscriber = partial(
        router.subscriber,
        transactional=False,
        max_attempts=max_attempts,
        max_in_flight=max_in_flight,
        provider=EMAIL_PROVIDER,  # each handler sends one e-mail through it
    )

    @subscriber(OrderCreated)
    async def send_order_confirmation(event: OrderCreated, ctx: MessageContext) -> None:
        await notifier.confirm_order(event, ctx)

    @subscriber(OrderPaid)
    async def send_payment_receipt(event: OrderPaid, ctx: MessageContext) -> None:
        await notifier.send_receipt(event, ctx)

    @subscriber(OrderCancelled)
    async def send_cancellation(event: OrderCancelled, ctx: MessageContext) -> None:
        await notifier.confirm_cancellation(event, ctx)

    @subscriber(OrderPaymentReversed)
    async def send_reversal_notice(event: OrderPaymentReversed, ctx: MessageContext) -> None:
        await notifier.tell_of_reversal(event, ctx)

    return router
