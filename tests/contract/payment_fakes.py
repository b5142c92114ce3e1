"""payment-service's ports in memory, with the outbox of :mod:`.outbox`: the webhook's store
of notifications, the payments its worker's handlers open, settle and expire, and the
gateway whose record they follow."""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from shop.contracts import Contract
from shop.messaging import MessageContext, Router
from shop.payment.adapters.metrics import PrometheusPaymentMetrics
from shop.payment.domain.gateway import (
    GatewayPayment,
    GatewayReversal,
    RefundRequest,
    RefundResult,
    ReversalKind,
)
from shop.payment.domain.notifications import Notification, Provider
from shop.payment.domain.payments import Payment
from shop.payment.domain.status import UNPAID, PaymentStatus
from shop.payment.handlers import build_router
from shop.payment.ports import StoredNotification
from shop.payment.service_layer.payments import PaymentWindow

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

    async def get(self, order_id: uuid.UUID, *, lock: bool = False) -> Payment | None:
        return self.ledger.payments.get(order_id)

    async def notification(
        self, provider: str, provider_event_id: str
    ) -> StoredNotification | None:
        return self.ledger.notifications.get((provider, provider_event_id))

    async def opened_between(
        self, since: datetime, until: datetime, *, limit: int
    ) -> list[Payment]:
        return list(self.ledger.payments.values())[:limit]

    async def unprocessed_notifications(self, order_id: uuid.UUID) -> list[StoredNotification]:
        return [
            stored
            for stored in self.ledger.notifications.values()
            if stored.notification.order_id == order_id and stored.id not in self.ledger.outcomes
        ]

    async def set_status(
        self,
        payment: Payment,
        status: PaymentStatus,
        *,
        charge: GatewayPayment | None = None,
        paid_at: datetime | None = None,
    ) -> None:
        self.ledger.set_status(payment.order_id, status)
        if charge is not None:
            self.ledger.payments[payment.order_id] = dataclasses.replace(
                self.ledger.payments[payment.order_id],
                provider=charge.provider,
                provider_payment_id=charge.transaction_id,
            )

    async def expire(
        self, order_id: uuid.UUID, *, order_number: str, amount: int, currency: str
    ) -> bool:
        if order_id not in self.ledger.payments:
            self.ledger.payments[order_id] = Payment(
                uuid.uuid4(), order_id, amount, currency, PaymentStatus.EXPIRED
            )
            self.ledger.order_numbers[order_id] = order_number
            return True
        if self.ledger.payments[order_id].status not in UNPAID:
            return False
        self.ledger.set_status(order_id, PaymentStatus.EXPIRED)
        return True

    async def record_reversal(
        self, payment: Payment, reversal: GatewayReversal, *, status: PaymentStatus
    ) -> bool:
        current = self.ledger.payments[payment.order_id]
        if reversal.reference in current.reversals:
            return False
        self.ledger.payments[payment.order_id] = dataclasses.replace(
            current,
            status=status,
            reversed_amount=current.reversed_amount + reversal.amount,
            reversals=current.reversals | {reversal.reference},
        )
        return True

    async def flag(self, payment: Payment, reason: str) -> None:
        self.ledger.flagged[payment.order_id] = reason

    async def settle(self, stored: StoredNotification, outcome: str) -> None:
        self.ledger.outcomes.setdefault(stored.id, outcome)

    async def add_event(self, event: Contract, *, key: str, due_at: datetime | None = None) -> None:
        self.ledger.outbox.add(event, key=key, due_at=due_at)


class FakePaymentStore:
    def __init__(self, ledger: PaymentLedger) -> None:
        self.ledger = ledger
        self.payments = FakePayments(ledger)

    @asynccontextmanager
    async def alone(self, job: str) -> AsyncIterator[bool]:
        yield True

    def joining(self, ctx: MessageContext) -> FakePayments:
        return self.payments

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[FakePayments]:
        yield self.payments


class GatewayRecord:
    """The gateway's side: what it records of each order's charge, as its status API would
    answer (the producers' scenarios write it, as a customer paying would)."""

    def __init__(self) -> None:
        self.provider = Provider.SHOP
        self.charges: dict[uuid.UUID, GatewayPayment] = {}

    async def status(self, order_id: uuid.UUID) -> GatewayPayment | None:
        return self.charges.get(order_id)

    async def refund(self, request: RefundRequest) -> RefundResult:
        charge = self.charges[request.order_id]
        reversal = GatewayReversal(ReversalKind.REFUND, request.refund_key, request.amount)
        self.charges[request.order_id] = dataclasses.replace(
            charge, reversals=(*charge.reversals, reversal)
        )
        return RefundResult(request.refund_key, request.amount)


def payment_worker(ledger: PaymentLedger, gateway: GatewayRecord | None = None) -> Router:
    """payment-service's worker on ``ledger``, following ``gateway``'s record."""
    window = PaymentWindow(length=timedelta(minutes=30), grace=timedelta(minutes=1))
    return build_router(
        FakePaymentStore(ledger),
        {Provider.SHOP: gateway or GatewayRecord()},
        window,
        PrometheusPaymentMetrics(),
    )
