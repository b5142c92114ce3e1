"""What payment-service does when messages arrive: decoding, retries and dead letters are
done by :mod:`shop.messaging`; each handler calls its use case."""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Final

from shop.contracts import (
    ConsumerGroup,
    ExpirePayment,
    OrderCancelled,
    OrderCreated,
    ProcessPayment,
    RefundPayment,
)
from shop.messaging import (
    MessageContext,
    PermanentError,
    ProviderUnavailable,
    Router,
    TransientError,
)
from shop.payment.domain.errors import DomainError, GatewayUnavailable, NotificationDisputed
from shop.payment.domain.notifications import Provider
from shop.payment.ports import PaymentMetrics, PaymentStore
from shop.payment.service_layer import payments
from shop.payment.service_layer.payments import Gateways, PaymentWindow

GATEWAY_PROVIDER: Final = "gateway"
"""The gateways' APIs, for their circuit breaker, rate limit and metrics: one for both, as
a shop takes its payments through one gateway."""


def build_router(
    store: PaymentStore, gateways: Gateways, window: PaymentWindow, metrics: PaymentMetrics
) -> Router:
    router = Router(ConsumerGroup.PAYMENT)

    @router.subscriber(OrderCreated)
    async def open_payment(event: OrderCreated, ctx: MessageContext) -> None:
        await payments.open_payment(store.joining(ctx), event, window)

    @router.subscriber(OrderCancelled)
    async def cancel_payment(event: OrderCancelled, ctx: MessageContext) -> None:
        await payments.cancel_payment(store.joining(ctx), event, ctx.log)

    # The handlers that ask a gateway keep no inbox row: the gateway is asked outside any
    # transaction, and what they change is idempotent by the payment's state and by each
    # reversal's reference. A flag must outlast the dead letter that follows it.
    @router.subscriber(ProcessPayment, transactional=False, provider=GATEWAY_PROVIDER)
    async def process_payment(command: ProcessPayment, ctx: MessageContext) -> None:
        provider = command.provider or Provider.SHOP.value
        try:
            await told_to_the_pipeline(
                payments.process_notification(
                    store, gateways, provider, command.provider_event_id, ctx.log
                )
            )
        except PermanentError as error:
            if isinstance(error.__cause__, NotificationDisputed):
                metrics.notification_disputed(provider)
            raise

    @router.subscriber(ExpirePayment, transactional=False, provider=GATEWAY_PROVIDER)
    async def expire_payment(command: ExpirePayment, ctx: MessageContext) -> None:
        await told_to_the_pipeline(
            payments.expire_payment(
                store, gateways, command.order_id, ctx.log, recheck_after=window.grace
            )
        )

    @router.subscriber(RefundPayment, transactional=False, provider=GATEWAY_PROVIDER)
    async def refund_payment(command: RefundPayment, ctx: MessageContext) -> None:
        await told_to_the_pipeline(payments.refund_payment(store, gateways, command, ctx.log))

    return router


async def told_to_the_pipeline(use_case: Awaitable[str]) -> None:
    """A use case that asks a gateway, its failures told to the pipeline: a gateway that
    could not be asked, or said when to come back or that it is asked too often, is its
    provider's failure (for its breaker and rate limit); one that answered something not
    settled yet is retried; a refusal retrying cannot change is a dead letter whose reason
    names it."""
    try:
        await use_case
    except GatewayUnavailable as error:
        told = error.retry_after is not None or error.too_fast
        if told or not error.answered:
            raise ProviderUnavailable(
                GATEWAY_PROVIDER,
                str(error),
                retry_after=error.retry_after,
                too_fast=error.too_fast,
            ) from error
        raise TransientError(str(error)) from error
    except DomainError as error:
        raise PermanentError(f"{type(error).__name__}: {error}") from error
