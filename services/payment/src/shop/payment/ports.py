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
from shop.payment.domain.gateway import (
    GatewayPayment,
    GatewayReversal,
    RefundRequest,
    RefundResult,
)
from shop.payment.domain.notifications import Notification, Provider
from shop.payment.domain.payments import Payment
from shop.payment.domain.status import PaymentStatus


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
    """The payments and kept notifications of one transaction, and its outbox: what a use
    case changes commits together, or not at all."""

    async def open(
        self, order_id: uuid.UUID, *, order_number: str, amount: int, currency: str
    ) -> bool:
        """A pending payment for the order; False when it has one already."""
        ...

    async def get(self, order_id: uuid.UUID, *, lock: bool = False) -> Payment | None:
        """The order's payment; ``lock`` holds it (``FOR UPDATE``) until the transaction
        ends, so that one use case at a time moves it."""
        ...

    async def notification(
        self, provider: str, provider_event_id: str
    ) -> StoredNotification | None: ...

    async def opened_between(
        self, since: datetime, until: datetime, *, limit: int
    ) -> list[Payment]:
        """Payments opened in ``[since, until)``, oldest first, at most ``limit``."""
        ...

    async def unprocessed_notifications(self, order_id: uuid.UUID) -> list[StoredNotification]:
        """The order's kept notifications not processed yet: those that came before its
        payment was opened wait here for it."""
        ...

    async def set_status(
        self,
        payment: Payment,
        status: PaymentStatus,
        *,
        charge: GatewayPayment | None = None,
        paid_at: datetime | None = None,
    ) -> None:
        """Move the payment (a checked transition), noting the gateway's charge when given."""
        ...

    async def expire(
        self, order_id: uuid.UUID, *, order_number: str, amount: int, currency: str
    ) -> bool:
        """An unpaid (pending or failed) payment becomes expired, and one not opened yet is
        opened expired (so that a later :meth:`open` finds it and changes nothing); False
        when the order's payment was neither."""
        ...

    async def record_reversal(
        self, payment: Payment, reversal: GatewayReversal, *, status: PaymentStatus
    ) -> bool:
        """Record a reversal once by its reference, add it to the payment's reversed amount
        and move the payment to ``status``; False when it was recorded already."""
        ...

    async def flag(self, payment: Payment, reason: str) -> None:
        """Mark the payment for a person to look at, saying why."""
        ...

    async def settle(self, stored: StoredNotification, outcome: str) -> None:
        """Record that the notification was processed, and with what outcome."""
        ...

    async def add_event(
        self, event: Contract, *, key: str, due_at: datetime | None = None
    ) -> None: ...


class PaymentStore(Protocol):
    def alone(self, job: str) -> AbstractAsyncContextManager[bool]:
        """While the block runs, no other worker runs ``job``: True when this one may (the
        others get False at once and skip it)."""
        ...

    def joining(self, ctx: MessageContext) -> Payments:
        """The payments of the handler's transaction (the one its inbox row commits with)."""
        ...

    def transaction(self) -> AbstractAsyncContextManager[Payments]:
        """A transaction of its own, committed when the block ends, rolled back when it
        raises."""
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

    async def close(self, order_id: uuid.UUID) -> None:
        """End the order's charge that still waits for the customer, so that it can no
        longer be paid. :class:`~shop.payment.domain.errors.GatewayRefused` when it can
        no longer be closed (it was paid, or failed, meanwhile): its status tells which."""
        ...


class PaymentMetrics(Protocol):
    """What the payment rules count, for the worker's ``/metrics``."""

    def notification_disputed(self, provider: str) -> None: ...

    def reconciled(self, drift: dict[str, int]) -> None:
        """The last reconciliation's findings, by kind (every kind, zeros included)."""
        ...
