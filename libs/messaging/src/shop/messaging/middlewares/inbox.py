"""A transactional subscriber's handler runs in a transaction that records, in the inbox,
that this subscriber handled this event: the effects and the record commit together, or
neither does, and a message delivered again is skipped."""

from __future__ import annotations

from typing import Final

import structlog
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine, AsyncSession, async_sessionmaker

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
        async with self.engine.connect() as connection, connection.begin():
            first_time = await _record(
                connection, handling.subscriber_id, envelope.event_id, envelope.type
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
            # The session joins the connection's transaction, which commits (or rolls
            # back) when the block ends: the handler's effects with the inbox row.
            session = self.sessions(bind=connection)
            try:
                handling.session = session
                outcome = await call_next(handling)
                await session.flush()
                return outcome
            finally:
                await session.close()


async def _record(
    connection: AsyncConnection, consumer: str | None, event_id: object, type_: str
) -> bool:
    """Record the message in the inbox; False when it was recorded before. Through the
    connection's own execute, not the driver's: that is what begins the transaction (an
    INSERT sent to the driver directly commits on its own, before the handler has run)."""
    result = await connection.exec_driver_sql(_RECORD, (consumer, event_id, type_))
    return result.first() is not None
