"""The record of e-mails sent, in ``order_notifications``: the SQL side of
:class:`shop.notification.ports.SentLog`."""

from __future__ import annotations

import uuid

from sqlalchemy import select
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from shop.notification.adapters.tables import order_notifications
from shop.notification.domain.kinds import NotificationKey


class SqlSentLog:
    def __init__(self, sessions: async_sessionmaker[AsyncSession]) -> None:
        self.sessions = sessions

    async def already_sent(self, key: NotificationKey) -> bool:
        query = select(order_notifications.c.order_id).where(
            order_notifications.c.order_id == key.order_id,
            order_notifications.c.kind == key.kind.value,
            order_notifications.c.reference == key.reference,
        )
        async with self.sessions() as session:
            return (await session.execute(query)).first() is not None

    async def mark_sent(
        self,
        key: NotificationKey,
        *,
        recipient: str,
        message_id: str,
        event_id: uuid.UUID,
    ) -> bool:
        statement = (
            insert(order_notifications)
            .values(
                order_id=key.order_id,
                kind=key.kind.value,
                reference=key.reference,
                recipient=recipient,
                message_id=message_id,
                event_id=event_id,
            )
            .on_conflict_do_nothing()
            .returning(order_notifications.c.order_id)
        )
        async with self.sessions() as session, session.begin():
            return (await session.execute(statement)).first() is not None
