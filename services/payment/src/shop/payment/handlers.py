"""What payment-service does when messages arrive: decoding, retries and dead letters are
done by :mod:`shop.messaging`; each handler calls its use case."""

from __future__ import annotations

from shop.contracts import ConsumerGroup, OrderCancelled, OrderCreated, ProcessPayment
from shop.messaging import MessageContext, PermanentError, Router, TransientError
from shop.payment.domain.errors import AmountMismatch, NotificationNotKept, PaymentNotOpened
from shop.payment.domain.notifications import Provider
from shop.payment.ports import PaymentStore
from shop.payment.service_layer import payments


def build_router(store: PaymentStore) -> Router:
    router = Router(ConsumerGroup.PAYMENT)

    @router.subscriber(OrderCreated)
    async def open_payment(event: OrderCreated, ctx: MessageContext) -> None:
        await payments.open_payment(store.joining(ctx), event)

    @router.subscriber(OrderCancelled)
    async def expire_payment(event: OrderCancelled, ctx: MessageContext) -> None:
        await payments.expire_payment(store.joining(ctx), event)

    # Not in the inbox's transaction: a notification for another amount is flagged in a
    # transaction of its own once the payment's lock is released, and the message still
    # goes to the dead letters. Processing is idempotent by the payment's state instead.
    @router.subscriber(ProcessPayment, transactional=False)
    async def process_payment(command: ProcessPayment, ctx: MessageContext) -> None:
        provider = command.provider or Provider.SHOP.value
        try:
            await payments.process_notification(store, provider, command.provider_event_id, ctx.log)
        except PaymentNotOpened as error:
            raise TransientError(str(error)) from error
        except (AmountMismatch, NotificationNotKept) as error:
            raise PermanentError(str(error)) from error

    return router
