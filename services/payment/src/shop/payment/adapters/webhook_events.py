"""Gateway notifications in ``payment_events``: the Postgres side of
:class:`shop.payment.ports.WebhookStore`."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from sqlalchemy import text
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from shop.contracts import Contract
from shop.messaging import add
from shop.payment.adapters.tables import payment_events
from shop.payment.domain.notifications import Notification


class SqlWebhookStore:
    def __init__(self, sessions: async_sessionmaker[AsyncSession]) -> None:
        self.sessions = sessions

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[SqlWebhookEvents]:
        async with self.sessions() as session, session.begin():
            yield SqlWebhookEvents(session)

    async def check(self) -> None:
        async with self.sessions() as session:
            await session.execute(text("SELECT 1"))


class SqlWebhookEvents:
    def __init__(self, session: AsyncSession) -> None:
        self.session = session

    async def record(self, notification: Notification, raw_body: bytes) -> bool:
        statement = (
            insert(payment_events)
            .values(
                provider=notification.provider.value,
                provider_event_id=notification.provider_event_id,
                type=notification.type,
                raw_body=raw_body,
                meaning=notification.meaning.value,
                order_id=notification.order_id,
                amount=notification.amount,
                currency=notification.currency,
                provider_payment_id=notification.provider_payment_id,
            )
            .on_conflict_do_nothing()
            .returning(payment_events.c.id)
        )
        return (await self.session.execute(statement)).first() is not None

    async def add_command(self, command: Contract, *, key: str) -> None:
        await add(self.session, command, key=key)
