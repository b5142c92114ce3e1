"""What payment-service's use cases need from the world, as Protocols: ``adapters/``
implements them on Postgres, unit tests implement them with fakes, ``bootstrap`` chooses."""

from __future__ import annotations

import uuid
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from shop.contracts import Contract
from shop.messaging import MessageContext
from shop.payment.domain.gateway import GatewayPayment, RefundRequest, RefundResult
from shop.payment.domain.notifications import Notification, Provider
from shop.payment.domain.payments import Payment


class WebhookStore(Protocol):
    """Where the gateways' notifications are kept."""

    async def take(self, notification: Notification, raw_body: bytes, command: Contract) -> bool:
        """In one transaction: keep ``notification`` with its body byte for byte, once per
        provider event id, and, when it is new, add ``command`` to the outbox (keyed by the
        notification's order). False for a repeat, which changes nothing."""
        ...

    async def check(self) -> None:
        """Raise when the store cannot be reached (readiness)."""
        ...


@dataclass(frozen=True, slots=True)
class StoredNotification:
    """A kept notification: its row, and what it means."""

    id: int
    notification: Notification


class Payments(Protocol):
    """The payments and kept notifications of a message handler's transaction, and its
    outbox: what a handler changes commits with its inbox row, or not at all."""

    async def open(
        self, order_id: uuid.UUID, *, order_number: str, amount: int, currency: str
    ) -> bool:
        """A pending payment for the order; False when it has one already."""
        ...

    async def lock(self, order_id: uuid.UUID) -> Payment | None:
        """The order's payment, locked until the transaction ends."""
        ...

    async def notification(
        self, provider: str, provider_event_id: str
    ) -> StoredNotification | None: ...

    async def mark_paid(
        self, payment: Payment, notification: Notification, *, at: datetime
    ) -> None: ...

    async def mark_failed(self, payment: Payment, notification: Notification) -> None: ...

    async def expire(
        self, order_id: uuid.UUID, *, order_number: str, amount: int, currency: str
    ) -> bool:
        """A pending payment becomes expired, and one not opened yet is opened expired (so
        that a later :meth:`open` finds it and changes nothing); False when the order's
        payment was neither (paid, failed or expired already)."""
        ...

    async def settle(self, stored: StoredNotification, outcome: str) -> None:
        """Record that the notification was processed, and with what outcome."""
        ...

    async def add_event(self, event: Contract, *, key: str) -> None: ...


class PaymentStore(Protocol):
    def joining(self, ctx: MessageContext) -> Payments:
        """The payments of the handler's transaction (the one its inbox row commits with)."""
        ...

    def transaction(self) -> AbstractAsyncContextManager[Payments]:
        """A transaction of its own, committed when the block ends, rolled back when it
        raises."""
        ...

    async def flag(self, order_id: uuid.UUID, stored: StoredNotification, reason: str) -> None:
        """In a transaction of its own: mark the payment for a person, and record the
        notification's outcome."""
        ...


class PaymentGateway(Protocol):
    """One provider's API, asked by the worker and never on a request's path. Errors are
    :class:`~shop.payment.domain.errors.GatewayUnavailable` (transient: retry, never guess)
    and :class:`~shop.payment.domain.errors.GatewayRefused` (the gateway said no for good)."""

    provider: Provider

    async def status(self, order_id: uuid.UUID) -> GatewayPayment | None:
        """What the gateway records for the order's payment; None when it has no charge for
        the order at all (a 404: the customer never reached the gateway)."""
        ...

    async def refund(self, request: RefundRequest) -> RefundResult:
        """Give ``request.amount`` back on the order's charge, once per ``refund_key``: the
        same key asked again answers the refund made the first time."""
        ...
