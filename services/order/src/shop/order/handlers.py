"""What order-service does when other services' events arrive: decoding, retries and dead
letters are done by :mod:`shop.messaging`; each handler calls its use case."""

from __future__ import annotations

from typing import Final

from shop.contracts import (
    CancelUnpaidOrder,
    ConsumerGroup,
    PaymentExpired,
    PaymentReceived,
    PaymentReversed,
)
from shop.messaging import MessageContext, PermanentError, Router, TransientError
from shop.order.domain.errors import OrderNotFound
from shop.order.domain.reversals import ReversalOfUnpaidOrder
from shop.order.ports import OrderStore
from shop.order.service_layer import cancellation, payments, reversals

REVERSAL_ATTEMPTS: Final = 10
"""Tries of a reversal that came before the payment or expiry it follows: with backoff
from 2 s doubling to 5 min, some 13 minutes of waiting."""


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

    @router.subscriber(PaymentExpired)
    async def cancel_expired_order(event: PaymentExpired, ctx: MessageContext) -> None:
        # The inbox row and the order's lock make it once, with any number of workers.
        try:
            await cancellation.cancel_unpaid(store.joining(ctx), event.order_id, ctx.log)
        except OrderNotFound as error:
            raise PermanentError(
                f"expired payment {event.payment_id} names no known order {event.order_id}"
            ) from error

    # A reversal may overtake the event it follows (PaymentReceived, or PaymentExpired for a
    # late payment given back): they travel on topics consumed apart. It is tried again
    # for a while (some 13 minutes) before it is left to a person.
    @router.subscriber(PaymentReversed, max_attempts=REVERSAL_ATTEMPTS)
    async def record_payment_reversal(event: PaymentReversed, ctx: MessageContext) -> None:
        try:
            await reversals.record_reversal(store.joining(ctx), event, ctx.log)
        except OrderNotFound as error:
            raise PermanentError(
                f"payment reversal {event.reference} names no known order {event.order_id}"
            ) from error
        except ReversalOfUnpaidOrder as error:
            raise TransientError(
                f"payment reversal {event.reference} for order {event.order_id}, which is "
                f"{error.status}: waiting for its payment or its expiry to arrive first"
            ) from error

    @router.subscriber(CancelUnpaidOrder)
    async def retired_cancel_unpaid_order(command: CancelUnpaidOrder, ctx: MessageContext) -> None:
        # Retired: checkouts before the upgrade scheduled it, and some may still be due.
        ctx.log.info(
            "CancelUnpaidOrder ignored: the payment window belongs to payment-service now",
            order_id=str(command.order_id),
        )

    return router
