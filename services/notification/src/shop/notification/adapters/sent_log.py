"""The record of e-mails sent, in ``order_notifications``: the SQL side of
:class:`shop.notification.ports.SentLog`.

A delivery sends an e-mail holding a transaction-level advisory lock on its key (see
:meth:`SqlSentLog.sending`): the lock goes with the transaction, so a worker that dies
mid-send lets go of it with its connection, and the next delivery may send again."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Final

from sqlalchemy import func, select
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from shop.notification.adapters.tables import order_notifications
from shop.notification.domain.kinds import NotificationKey
from shop.notification.ports import SendingElsewhere

_SENDING_LOCKS: Final = 0x5E4D
"""The first half of the two-part advisory lock keys of e-mails being sent: a space of
their own, apart from the one-part keys the relay and the migrations lock."""


def _lock_of(key: NotificationKey) -> str:
    return f"{key.order_id}/{key.kind.value}/{key.reference}"


class SqlSentLog:
    def __init__(self, sessions: async_sessionmaker[AsyncSession]) -> None:
        self.sessions = sessions

    @asynccontextmanager
    async def sending(self, key: NotificationKey) -> AsyncIterator[HeldSentLog]:
        async with self.sessions() as session, session.begin():
            held = await session.scalar(
                select(func.pg_try_advisory_xact_lock(_SENDING_LOCKS, func.hashtext(_lock_of(key))))
            )
            if not held:
                raise SendingElsewhere(f"another delivery is sending {_lock_of(key)} now")
            # The mark is written in this transaction: it is seen by the next holder, since
            # the lock is let go only as the transaction commits.
            yield HeldSentLog(session)

    async def already_sent(self, key: NotificationKey) -> bool:
        async with self.sessions() as session:
            return await HeldSentLog(session).already_sent(key)

    async def mark_sent(
        self, key: NotificationKey, *, recipient: str, message_id: str, event_id: uuid.UUID
    ) -> bool:
        async with self.sessions() as session, session.begin():
            return await HeldSentLog(session).mark_sent(
                key, recipient=recipient, message_id=message_id, event_id=event_id
            )


class HeldSentLog:
    """The record, read and written inside the transaction of :meth:`SqlSentLog.sending`."""

    def __init__(self, session: AsyncSession) -> None:
        self.session = session

    async def already_sent(self, key: NotificationKey) -> bool:
        query = select(order_notifications.c.order_id).where(
            order_notifications.c.order_id == key.order_id,
            order_notifications.c.kind == key.kind.value,
            order_notifications.c.reference == key.reference,
        )
        return (await self.session.execute(query)).first() is not None

    async def mark_sent(
        self, key: NotificationKey, *, recipient: str, message_id: str, event_id: uuid.UUID
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
        return (await self.session.execute(statement)).first() is not None
