"""A transactional subscriber's handler runs in a transaction that records, in the inbox,
that this subscriber handled this event: the effects and the record commit together, or
neither does, and a message delivered again is skipped."""

from __future__ import annotations

import structlog
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from shop.messaging.logging import trace_ids
from shop.messaging.middlewares.chain import Handling, Next
from shop.messaging.outcome import Ack, Outcome
from shop.messaging.schema import inbox

log = structlog.get_logger("shop.messaging")


class Inbox:
    def __init__(self, sessions: async_sessionmaker[AsyncSession] | None) -> None:
        self.sessions = sessions

    async def __call__(self, handling: Handling, call_next: Next) -> Outcome:
        subscriber, envelope = handling.routed()
        if not subscriber.transactional:
            return await call_next(handling)
        assert self.sessions is not None  # the pipeline checks it
        async with self.sessions() as session, session.begin():
            first_time = await session.execute(
                insert(inbox)
                .values(
                    consumer=handling.subscriber_id,
                    event_id=envelope.event_id,
                    message_type=envelope.type,
                )
                .on_conflict_do_nothing()
                .returning(inbox.c.event_id)
            )
            if first_time.first() is None:
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
            handling.session = session
            return await call_next(handling)
