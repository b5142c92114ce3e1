"""What order-service does when other services' events arrive: decoding, retries and dead
letters are done by :mod:`shop.messaging`; each handler calls its use case."""

from __future__ import annotations

from shop.contracts import CancelUnpaidOrder, ConsumerGroup, PaymentReceived
from shop.messaging import MessageContext, PermanentError, Router
from shop.order.domain.errors import OrderNotFound
from shop.order.ports import OrderStore
from shop.order.service_layer import cancellation, payments


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

    @router.subscriber(CancelUnpaidOrder)
    async def cancel_unpaid_order(command: CancelUnpaidOrder, ctx: MessageContext) -> None:
        # The inbox row and the order's lock make it once, with any number of workers.
        try:
            await cancellation.cancel_unpaid(store.joining(ctx), command.order_id, ctx.log)
        except OrderNotFound as error:
            raise PermanentError(f"no order {command.order_id} to cancel") from error

    return router
