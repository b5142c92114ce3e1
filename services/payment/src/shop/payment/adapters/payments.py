"""Payments and kept notifications in SQLAlchemy: the Postgres side of
:class:`shop.payment.ports.PaymentStore`."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import datetime

from sqlalchemy import func, select, update
from sqlalchemy.dialects.postgresql import Insert, insert
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from shop.contracts import Contract
from shop.messaging import MessageContext, add
from shop.payment.adapters.tables import payment_events, payments
from shop.payment.domain.notifications import Meaning, Notification, Provider
from shop.payment.domain.payments import Payment
from shop.payment.domain.status import PaymentStatus
from shop.payment.ports import StoredNotification


class SqlPaymentStore:
    def __init__(self, sessions: async_sessionmaker[AsyncSession]) -> None:
        self.sessions = sessions

    def joining(self, ctx: MessageContext) -> SqlPayments:
        return SqlPayments(ctx.db)

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[SqlPayments]:
        async with self.sessions() as session, session.begin():
            yield SqlPayments(session)

    async def flag(self, order_id: uuid.UUID, stored: StoredNotification, reason: str) -> None:
        async with self.transaction() as in_transaction:
            await in_transaction.session.execute(
                update(payments)
                .where(payments.c.order_id == order_id)
                .values(flagged=reason[:500], updated_at=func.now())
            )
            await in_transaction.settle(stored, f"flagged: {reason}")


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

    async def lock(self, order_id: uuid.UUID) -> Payment | None:
        row = (
            await self.session.execute(
                select(payments).where(payments.c.order_id == order_id).with_for_update()
            )
        ).first()
        if row is None:
            return None
        return Payment(row.id, row.order_id, row.amount, row.currency, PaymentStatus(row.status))

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
        if row is None:
            return None
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

    async def mark_paid(
        self, payment: Payment, notification: Notification, *, at: datetime
    ) -> None:
        await self._settle_payment(payment, notification, PaymentStatus.PAID, paid_at=at)

    async def mark_failed(self, payment: Payment, notification: Notification) -> None:
        await self._settle_payment(payment, notification, PaymentStatus.FAILED)

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
                where=payments.c.status == PaymentStatus.PENDING.value,
            )
            .returning(payments.c.id)
        )
        return (await self.session.execute(statement)).first() is not None

    async def settle(self, stored: StoredNotification, outcome: str) -> None:
        await self.session.execute(
            update(payment_events)
            # The first outcome stays: a redelivery's "already paid" must not hide the
            # notification that paid.
            .where(payment_events.c.id == stored.id, payment_events.c.processed_at.is_(None))
            .values(processed_at=func.now(), outcome=outcome[:500])
        )

    async def add_event(self, event: Contract, *, key: str) -> None:
        await add(self.session, event, key=key)

    async def _settle_payment(
        self,
        payment: Payment,
        notification: Notification,
        status: PaymentStatus,
        *,
        paid_at: datetime | None = None,
    ) -> None:
        await self.session.execute(
            update(payments)
            .where(payments.c.id == payment.id)
            .values(
                status=status.value,
                provider=notification.provider.value,
                provider_payment_id=notification.provider_payment_id,
                paid_at=paid_at,
                updated_at=func.now(),
            )
        )
