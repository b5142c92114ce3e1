"""What order-service does when other services' events arrive: decoding, retries and dead
letters are done by :mod:`shop.messaging`; each handler calls its use case."""

from __future__ import annotations

from shop.contracts import ConsumerGroup, PaymentReceived
from shop.messaging import MessageContext, PermanentError, Router
from shop.order.domain.errors import OrderNotFound
from shop.order.ports import OrderStore
from shop.order.service_layer import payments


def build_router(store: OrderStore) -> Router:
    router = Router(ConsumerGroup.ORDER)

    @router.subscriber(PaymentReceived)
    async def mark_order_paid(event: PaymentReceived, ctx: MessageContext) -> None:
        try:
            await payments.mark_paid(store.joining(ctx), event, ctx.log)
        except OrderNotFound as error:
            # Retrying cannot make the order exist: a person looks at the dead letter.
            raise PermanentError(
                f"payment {event.payment_id} names no known order {event.order_id}"
            ) from error

    return router
