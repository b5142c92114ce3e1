"""payment-service's ports in memory, with the outbox of :mod:`.outbox`: the webhook's store
of notifications, and the payments its worker's handlers open, settle and expire."""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import datetime

from shop.contracts import Contract
from shop.messaging import MessageContext
from shop.payment.domain.notifications import Notification
from shop.payment.domain.payments import Payment
from shop.payment.domain.status import PaymentStatus
from shop.payment.ports import StoredNotification

from .outbox import RecordingOutbox


@dataclass
class PaymentLedger:
    """What payment-service's database would hold."""

    payments: dict[uuid.UUID, Payment] = field(default_factory=dict)
    """By order id: one payment per order."""
    order_numbers: dict[uuid.UUID, str] = field(default_factory=dict)
    notifications: dict[tuple[str, str], StoredNotification] = field(default_factory=dict)
    outcomes: dict[int, str] = field(default_factory=dict)
    flagged: dict[uuid.UUID, str] = field(default_factory=dict)
    outbox: RecordingOutbox = field(default_factory=RecordingOutbox)

    def keep(self, notification: Notification) -> bool:
        key = (notification.provider.value, notification.provider_event_id)
        if key in self.notifications:
            return False
        self.notifications[key] = StoredNotification(len(self.notifications) + 1, notification)
        return True

    def set_status(self, order_id: uuid.UUID, status: PaymentStatus) -> None:
        self.payments[order_id] = dataclasses.replace(self.payments[order_id], status=status)


class FakeWebhookStore:
    def __init__(self, ledger: PaymentLedger) -> None:
        self.ledger = ledger

    async def take(self, notification: Notification, raw_body: bytes, command: Contract) -> bool:
        new = self.ledger.keep(notification)
        if new:
            # Keyed by the notification's order, as the port promises.
            self.ledger.outbox.add(command, key=str(notification.order_id))
        return new

    async def check(self) -> None:
        return None


class FakePayments:
    def __init__(self, ledger: PaymentLedger) -> None:
        self.ledger = ledger

    async def open(
        self, order_id: uuid.UUID, *, order_number: str, amount: int, currency: str
    ) -> bool:
        if order_id in self.ledger.payments:
            return False
        self.ledger.payments[order_id] = Payment(
            uuid.uuid4(), order_id, amount, currency, PaymentStatus.PENDING
        )
        self.ledger.order_numbers[order_id] = order_number
        return True

    async def lock(self, order_id: uuid.UUID) -> Payment | None:
        return self.ledger.payments.get(order_id)

    async def notification(
        self, provider: str, provider_event_id: str
    ) -> StoredNotification | None:
        return self.ledger.notifications.get((provider, provider_event_id))

    async def mark_paid(
        self, payment: Payment, notification: Notification, *, at: datetime
    ) -> None:
        self.ledger.set_status(payment.order_id, PaymentStatus.PAID)

    async def mark_failed(self, payment: Payment, notification: Notification) -> None:
        self.ledger.set_status(payment.order_id, PaymentStatus.FAILED)

    async def expire(
        self, order_id: uuid.UUID, *, order_number: str, amount: int, currency: str
    ) -> bool:
        if order_id not in self.ledger.payments:
            self.ledger.payments[order_id] = Payment(
                uuid.uuid4(), order_id, amount, currency, PaymentStatus.EXPIRED
            )
            self.ledger.order_numbers[order_id] = order_number
            return True
        if self.ledger.payments[order_id].status != PaymentStatus.PENDING:
            return False
        self.ledger.set_status(order_id, PaymentStatus.EXPIRED)
        return True

    async def settle(self, stored: StoredNotification, outcome: str) -> None:
        self.ledger.outcomes.setdefault(stored.id, outcome)

    async def add_event(self, event: Contract, *, key: str) -> None:
        self.ledger.outbox.add(event, key=key)


class FakePaymentStore:
    def __init__(self, ledger: PaymentLedger) -> None:
        self.ledger = ledger
        self.payments = FakePayments(ledger)

    def joining(self, ctx: MessageContext) -> FakePayments:
        return self.payments

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[FakePayments]:
        yield self.payments

    async def flag(self, order_id: uuid.UUID, stored: StoredNotification, reason: str) -> None:
        self.ledger.flagged[order_id] = reason
        self.ledger.outcomes.setdefault(stored.id, f"flagged: {reason}")
