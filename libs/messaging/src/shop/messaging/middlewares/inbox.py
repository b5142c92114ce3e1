"""A transactional subscriber's handler runs in a transaction that records, in the inbox,
that this subscriber handled this event: the effects and the record commit together, or
neither does, and a message delivered again is skipped."""

from __future__ import annotations

from typing import Final

import structlog
from sqlalchemy import Connection, RootTransaction
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker
from sqlalchemy.orm import Session

from shop.messaging.logging import trace_ids
from shop.messaging.middlewares.chain import Handling, Next
from shop.messaging.outcome import Ack, Outcome

log = structlog.get_logger("shop.messaging")

_RECORD: Final = """
INSERT INTO inbox (consumer, event_id, message_type) VALUES ($1, $2, $3)
ON CONFLICT DO NOTHING RETURNING event_id"""
"""Plain SQL on the connection: through the ORM session, the inbox row and the session's
own transaction cost more CPU than the handler's work (make bench-consume). The handler's
session joins the connection's transaction."""


class Inbox:
    def __init__(self, sessions: async_sessionmaker[AsyncSession] | None) -> None:
        self.sessions = sessions
        self.engine: AsyncEngine | None = sessions.kw.get("bind") if sessions else None

    async def __call__(self, handling: Handling, call_next: Next) -> Outcome:
        subscriber, envelope = handling.routed()
        if not subscriber.transactional:
            return await call_next(handling)
        # The pipeline checks that a transactional subscriber has sessions.
        assert self.sessions is not None
        assert self.engine is not None
        # Each call of the async API is a greenlet of its own (some 10 µs of CPU apiece, a
        # good part of a message's cost): the steps that need no await in between share one.
        # Closing the connection rolls back whatever was not committed.
        async with self.engine.connect() as connection:
            transaction, first_time = await connection.run_sync(
                _begin_and_record, handling.subscriber_id, envelope.event_id, envelope.type
            )
            if not first_time:
                log.info(
                    "duplicate message skipped",
                    subscriber_id=handling.subscriber_id,
                    event_id=str(envelope.event_id),
                    correlation_id=envelope.correlation_id,
                    message_type=envelope.type,
                    attempt=handling.delivery.attempt,
                    **trace_ids(),
                )
                return Ack(duplicate=True)
            # The session joins the connection's transaction, which commits only once the
            # handler has returned: the handler's effects with the inbox row.
            session = self.sessions(bind=connection)
            handling.session = session
            try:
                outcome = await call_next(handling)
            except BaseException:
                await session.close()
                raise
            await connection.run_sync(_flush_and_commit, transaction, session.sync_session)
            return outcome


def _begin_and_record(
    connection: Connection, consumer: str | None, event_id: object, type_: str
) -> tuple[RootTransaction, bool]:
    """Begin the transaction and record the message in the inbox: the transaction, and
    False when the message was recorded before. Through the connection's own execute, not
    the driver's: that is what begins the transaction (an INSERT sent to the driver directly
    commits on its own, before the handler has run)."""
    transaction = connection.begin()
    result = connection.exec_driver_sql(_RECORD, (consumer, event_id, type_))
    return transaction, result.first() is not None


def _flush_and_commit(
    connection: Connection, transaction: RootTransaction, session: Session
) -> None:
    """Write what the handler left in its session, close the session, and commit the
    transaction the inbox row was written in, with the handler's effects. That very
    transaction: a handler that rolled its session back ended it, and what it wrote after
    went into one of its own, which the session's close rolls back; committing the
    connection would then commit nothing and take the message as done. Committing an ended
    transaction raises, and the message is tried again."""
    try:
        session.flush()
    finally:
        session.close()
    transaction.commit()
