"""Payments and kept notifications in SQLAlchemy: the Postgres side of
:class:`shop.payment.ports.PaymentStore`."""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import datetime
from typing import Any

from sqlalchemy import func, select, text, update
from sqlalchemy.dialects.postgresql import Insert, insert
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from shop.contracts import Contract
from shop.messaging import MessageContext, add
from shop.payment.adapters.tables import payment_events, payment_reversals, payments
from shop.payment.domain.gateway import GatewayPayment, GatewayReversal
from shop.payment.domain.notifications import Meaning, Notification, Provider
from shop.payment.domain.payments import Payment
from shop.payment.domain.status import PaymentStatus, check_transition
from shop.payment.ports import StoredNotification

_TRY_LOCK = text("SELECT pg_try_advisory_lock(:key)")
_UNLOCK = text("SELECT pg_advisory_unlock(:key)")


class SqlPaymentStore:
    def __init__(self, sessions: async_sessionmaker[AsyncSession]) -> None:
        self.sessions = sessions

    def joining(self, ctx: MessageContext) -> SqlPayments:
        return SqlPayments(ctx.db)

    @asynccontextmanager
    async def alone(self, job: str) -> AsyncIterator[bool]:
        # A session-level advisory lock, held by one connection for the whole job and let go
        # when it ends (or when a crashed worker's connection closes).
        key = int.from_bytes(hashlib.sha256(job.encode()).digest()[:8], "big", signed=True)
        async with self.sessions() as session:
            taken = bool((await session.execute(_TRY_LOCK, {"key": key})).scalar())
            try:
                yield taken
            finally:
                if taken:
                    await session.execute(_UNLOCK, {"key": key})

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[SqlPayments]:
        async with self.sessions() as session, session.begin():
            yield SqlPayments(session)


def _new_payment(
    order_id: uuid.UUID, order_number: str, amount: int, currency: str, status: PaymentStatus
) -> Insert:
    return insert(payments).values(
        id=uuid.uuid4(),
        order_id=order_id,
        order_number=order_number,
        amount=amount,
        currency=currency,
        status=status.value,
    )


_UNPAID = [PaymentStatus.PENDING.value, PaymentStatus.FAILED.value]


class SqlPayments:
    def __init__(self, session: AsyncSession) -> None:
        self.session = session

    async def open(
        self, order_id: uuid.UUID, *, order_number: str, amount: int, currency: str
    ) -> bool:
        statement = (
            _new_payment(order_id, order_number, amount, currency, PaymentStatus.PENDING)
            .on_conflict_do_nothing(index_elements=[payments.c.order_id])
            .returning(payments.c.id)
        )
        return (await self.session.execute(statement)).first() is not None

    async def get(self, order_id: uuid.UUID, *, lock: bool = False) -> Payment | None:
        query = select(payments).where(payments.c.order_id == order_id)
        row = (await self.session.execute(query.with_for_update() if lock else query)).first()
        if row is None:
            return None
        references = (
            await self.session.execute(
                select(payment_reversals.c.reference).where(
                    payment_reversals.c.payment_id == row.id
                )
            )
        ).scalars()
        return Payment(
            id=row.id,
            order_id=row.order_id,
            amount=row.amount,
            currency=row.currency,
            status=PaymentStatus(row.status),
            provider=Provider(row.provider) if row.provider else None,
            provider_payment_id=row.provider_payment_id,
            reversed_amount=row.reversed_amount,
            reversals=frozenset(references),
            flagged=row.flagged,
        )

    async def notification(
        self, provider: str, provider_event_id: str
    ) -> StoredNotification | None:
        row = (
            await self.session.execute(
                select(payment_events).where(
                    payment_events.c.provider == provider,
                    payment_events.c.provider_event_id == provider_event_id,
                )
            )
        ).first()
        return None if row is None else _stored(row)

    async def opened_between(
        self, since: datetime, until: datetime, *, limit: int
    ) -> list[Payment]:
        rows = await self.session.execute(
            select(payments.c.order_id)
            .where(payments.c.created_at >= since, payments.c.created_at < until)
            .order_by(payments.c.created_at)
            .limit(limit)
        )
        found = [await self.get(order_id) for order_id in rows.scalars()]
        return [payment for payment in found if payment is not None]

    async def unprocessed_notifications(self, order_id: uuid.UUID) -> list[StoredNotification]:
        rows = await self.session.execute(
            select(payment_events)
            .where(payment_events.c.order_id == order_id, payment_events.c.processed_at.is_(None))
            .order_by(payment_events.c.id)
        )
        return [_stored(row) for row in rows]

    async def set_status(
        self,
        payment: Payment,
        status: PaymentStatus,
        *,
        charge: GatewayPayment | None = None,
        paid_at: datetime | None = None,
    ) -> None:
        check_transition(payment.status, status)
        values: dict[str, Any] = {"status": status.value, "updated_at": func.now()}
        if charge is not None:
            values |= {
                "provider": charge.provider.value,
                "provider_payment_id": charge.transaction_id,
            }
        if paid_at is not None:
            values["paid_at"] = paid_at
        await self.session.execute(
            update(payments)
            .where(payments.c.id == payment.id, payments.c.status == payment.status.value)
            .values(**values)
        )

    async def expire(
        self, order_id: uuid.UUID, *, order_number: str, amount: int, currency: str
    ) -> bool:
        # One statement on the order's row: an OrderCreated opening the payment at the same
        # moment is either before it (pending, then expired here) or after it (finds it and
        # does nothing). Should both insert at once, the loser fails on a unique key and its
        # message is retried, to find the row.
        statement = (
            _new_payment(order_id, order_number, amount, currency, PaymentStatus.EXPIRED)
            .on_conflict_do_update(
                index_elements=[payments.c.order_id],
                set_={"status": PaymentStatus.EXPIRED.value, "updated_at": func.now()},
                where=payments.c.status.in_(_UNPAID),
            )
            .returning(payments.c.id)
        )
        return (await self.session.execute(statement)).first() is not None

    async def record_reversal(
        self, payment: Payment, reversal: GatewayReversal, *, status: PaymentStatus
    ) -> bool:
        if status != payment.status:
            check_transition(payment.status, status)
        recorded = (
            await self.session.execute(
                insert(payment_reversals)
                .values(
                    payment_id=payment.id,
                    kind=reversal.kind.value,
                    reference=reversal.reference,
                    amount=reversal.amount,
                    reversed_at=reversal.at,
                )
                .on_conflict_do_nothing(
                    index_elements=[payment_reversals.c.payment_id, payment_reversals.c.reference]
                )
                .returning(payment_reversals.c.id)
            )
        ).first()
        if recorded is None:
            return False
        await self.session.execute(
            update(payments)
            .where(payments.c.id == payment.id)
            .values(
                status=status.value,
                reversed_amount=payments.c.reversed_amount + reversal.amount,
                updated_at=func.now(),
            )
        )
        return True

    async def flag(self, payment: Payment, reason: str) -> None:
        await self.session.execute(
            update(payments)
            .where(payments.c.id == payment.id)
            .values(flagged=reason[:500], updated_at=func.now())
        )

    async def settle(self, stored: StoredNotification, outcome: str) -> None:
        await self.session.execute(
            update(payment_events)
            # The first outcome stays: a redelivery's "already paid" must not hide the
            # notification that paid.
            .where(payment_events.c.id == stored.id, payment_events.c.processed_at.is_(None))
            .values(processed_at=func.now(), outcome=outcome[:500])
        )

    async def add_event(self, event: Contract, *, key: str, due_at: datetime | None = None) -> None:
        await add(self.session, event, key=key, due_at=due_at)


def _stored(row: Any) -> StoredNotification:
    return StoredNotification(
        row.id,
        Notification(
            provider=Provider(row.provider),
            provider_event_id=row.provider_event_id,
            type=row.type,
            meaning=Meaning(row.meaning),
            order_id=row.order_id,
            amount=row.amount,
            currency=row.currency,
            provider_payment_id=row.provider_payment_id,
        ),
    )
