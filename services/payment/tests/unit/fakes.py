"""In-memory stand-ins for payment-service's ports: the payments and kept notifications of
one shop, a transaction that rolls back on an exception as Postgres does, the outbox as a
list, and a gateway whose record the test writes."""

from __future__ import annotations

import copy
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field, replace
from datetime import datetime

from shop.contracts import Contract
from shop.messaging import MessageContext
from shop.payment.bus import PUBLISHES
from shop.payment.domain.errors import GatewayRefused, GatewayUnavailable
from shop.payment.domain.gateway import (
    ChargeState,
    GatewayPayment,
    GatewayReversal,
    RefundRequest,
    RefundResult,
    ReversalKind,
)
from shop.payment.domain.notifications import Notification, Provider
from shop.payment.domain.payments import Payment
from shop.payment.domain.status import UNPAID, PaymentStatus, check_transition
from shop.payment.ports import StoredNotification


@dataclass
class Outgoing:
    message: Contract
    key: str
    due_at: datetime | None


@dataclass
class State:
    """Everything the database would hold; copied at the start of a transaction and put
    back when it raises."""

    payments: dict[uuid.UUID, Payment] = field(default_factory=dict)
    notifications: list[StoredNotification] = field(default_factory=list)
    processed: dict[int, str] = field(default_factory=dict)
    flags: dict[uuid.UUID, str] = field(default_factory=dict)
    outbox: list[Outgoing] = field(default_factory=list)

    def sent(self, kind: type[Contract]) -> list[Contract]:
        return [item.message for item in self.outbox if isinstance(item.message, kind)]


class FakePayments:
    def __init__(self, state: State) -> None:
        self.state = state

    async def open(
        self, order_id: uuid.UUID, *, order_number: str, amount: int, currency: str
    ) -> bool:
        if order_id in self.state.payments:
            return False
        self.state.payments[order_id] = Payment(
            uuid.uuid4(), order_id, amount, currency, PaymentStatus.PENDING
        )
        return True

    async def get(self, order_id: uuid.UUID, *, lock: bool = False) -> Payment | None:
        return self.state.payments.get(order_id)

    async def notification(
        self, provider: str, provider_event_id: str
    ) -> StoredNotification | None:
        for stored in self.state.notifications:
            kept = stored.notification
            if (kept.provider.value, kept.provider_event_id) == (provider, provider_event_id):
                return stored
        return None

    async def opened_between(
        self, since: datetime, until: datetime, *, limit: int
    ) -> list[Payment]:
        return list(self.state.payments.values())[:limit]

    async def unprocessed_notifications(self, order_id: uuid.UUID) -> list[StoredNotification]:
        return [
            stored
            for stored in self.state.notifications
            if stored.notification.order_id == order_id and stored.id not in self.state.processed
        ]

    async def set_status(
        self,
        payment: Payment,
        status: PaymentStatus,
        *,
        charge: GatewayPayment | None = None,
        paid_at: datetime | None = None,
    ) -> None:
        current = self.state.payments[payment.order_id]
        check_transition(current.status, status)
        changed = replace(current, status=status)
        if charge is not None:
            changed = replace(
                changed, provider=charge.provider, provider_payment_id=charge.transaction_id
            )
        self.state.payments[payment.order_id] = changed

    async def expire(
        self, order_id: uuid.UUID, *, order_number: str, amount: int, currency: str
    ) -> bool:
        current = self.state.payments.get(order_id)
        if current is None:
            self.state.payments[order_id] = Payment(
                uuid.uuid4(), order_id, amount, currency, PaymentStatus.EXPIRED
            )
            return True
        if current.status in UNPAID:
            self.state.payments[order_id] = replace(current, status=PaymentStatus.EXPIRED)
            return True
        return False

    async def record_reversal(
        self, payment: Payment, reversal: GatewayReversal, *, status: PaymentStatus
    ) -> bool:
        current = self.state.payments[payment.order_id]
        if reversal.reference in current.reversals:
            return False
        if status != current.status:
            check_transition(current.status, status)
        self.state.payments[payment.order_id] = replace(
            current,
            status=status,
            reversed_amount=current.reversed_amount + reversal.amount,
            reversals=current.reversals | {reversal.reference},
        )
        return True

    async def flag(self, payment: Payment, reason: str) -> None:
        self.state.flags[payment.order_id] = reason
        kept = self.state.payments[payment.order_id]
        self.state.payments[payment.order_id] = replace(kept, flagged=reason)

    async def settle(self, stored: StoredNotification, outcome: str) -> None:
        self.state.processed.setdefault(stored.id, outcome)

    async def add_event(self, event: Contract, *, key: str, due_at: datetime | None = None) -> None:
        assert type(event) in PUBLISHES, f"{type(event).__name__} is not in PUBLISHES"
        self.state.outbox.append(Outgoing(event, key, due_at))


class FakePaymentStore:
    def __init__(self) -> None:
        self.state = State()

    def keep(self, notification: Notification) -> StoredNotification:
        """What the webhook does: keep a notification (unprocessed)."""
        stored = StoredNotification(len(self.state.notifications) + 1, notification)
        self.state.notifications.append(stored)
        return stored

    @asynccontextmanager
    async def alone(self, job: str) -> AsyncIterator[bool]:
        yield True

    def joining(self, ctx: MessageContext) -> FakePayments:
        return FakePayments(self.state)

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[FakePayments]:
        saved = copy.deepcopy(self.state)
        try:
            yield FakePayments(self.state)
        except BaseException:
            self.state.__dict__.update(saved.__dict__)
            raise


class FakeGateway:
    """A gateway whose record of each order the test sets; refunds are listed at once."""

    def __init__(self, provider: Provider = Provider.MIDTRANS) -> None:
        self.provider = provider
        self.charges: dict[uuid.UUID, GatewayPayment] = {}
        self.refunds: dict[str, RefundResult] = {}
        self.unavailable = False
        self.refusal: str | None = None
        self.closed: list[uuid.UUID] = []
        self.close_refusal: str | None = None
        self.refused_once_done = False
        """The refund is made, and its answer is a refusal (a repeat of a done cancel)."""
        self.moves_on_when_refused: str | None = None
        """The charge's status when a refund is refused (it settled meanwhile)."""
        self.paid_before_closing = False
        """The customer pays while the shop closes the charge: the close is refused."""

    async def status(self, order_id: uuid.UUID) -> GatewayPayment | None:
        if self.unavailable:
            raise GatewayUnavailable("the gateway did not answer")
        return self.charges.get(order_id)

    async def close(self, order_id: uuid.UUID) -> None:
        if self.unavailable:
            raise GatewayUnavailable("the gateway did not answer")
        charge = self.charges[order_id]
        if self.close_refusal:
            raise GatewayRefused(self.close_refusal)
        if self.paid_before_closing:
            self.charges[order_id] = replace(charge, status="settlement", state=ChargeState.PAID)
        if self.charges[order_id].state != ChargeState.PENDING:
            raise GatewayRefused("the transaction can no longer be closed")
        self.closed.append(order_id)
        self.charges[order_id] = replace(charge, status="expire", state=ChargeState.FAILED)

    async def refund(self, request: RefundRequest) -> RefundResult:
        if self.unavailable:
            raise GatewayUnavailable("the gateway did not answer")
        if self.refusal:
            if self.moves_on_when_refused:
                charge = self.charges[request.order_id]
                moved = replace(charge, status=self.moves_on_when_refused)
                self.charges[request.order_id] = moved
            raise GatewayRefused(self.refusal)
        if request.refund_key in self.refunds:
            return self.refunds[request.refund_key]
        charge = self.charges[request.order_id]
        if request.amount > charge.amount - charge.reversed_amount:
            raise GatewayRefused("refund amount exceeds what is left")
        result = RefundResult(str(len(self.refunds) + 1), request.amount)
        self.refunds[request.refund_key] = result
        reversal = GatewayReversal(ReversalKind.REFUND, result.reference, request.amount)
        self.charges[request.order_id] = replace(
            charge, status="refund", reversals=(*charge.reversals, reversal)
        )
        if self.refused_once_done:
            raise GatewayRefused("412 Merchant cannot modify the status of the transaction")
        return result
