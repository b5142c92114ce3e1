"""A consumer of the test that stands in for notification-service's (same group, so its
dead letters are the ones shop.ops reads): it refuses every ``OrderCreated`` while told to,
with a :class:`PermanentError` (a dead letter at once), and once told otherwise records the
e-mail as sent in notification-service's own table, as the real one does after sending
(it is not transactional: notification-service keeps no inbox, its record is that row)."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from shop.contracts import ConsumerGroup, OrderCreated
from shop.database import create_engine, session_factory
from shop.messaging import MessageContext, MessagingSettings, PermanentError, Relay, Router, Worker
from shop.messaging.health import OperatorRoute
from shop.messaging.transports import create_transport

REFUSAL = "the e-mail provider refused the address for now"


@dataclass
class RefusingConsumer:
    refusing: bool = True
    sent: list[uuid.UUID] = field(default_factory=list)
    """The orders whose confirmation went out, in order."""

    def router(self, sessions: async_sessionmaker[AsyncSession]) -> Router:
        router = Router(ConsumerGroup.NOTIFICATION)

        @router.subscriber(
            OrderCreated, name="send_order_confirmation", max_attempts=2, transactional=False
        )
        async def send_order_confirmation(event: OrderCreated, ctx: MessageContext) -> None:
            if self.refusing:
                raise PermanentError(REFUSAL)
            async with sessions() as session, session.begin():
                await session.execute(
                    text(
                        "INSERT INTO order_notifications (order_id, kind, recipient, "
                        "message_id, event_id) "
                        "VALUES (:order, 'order_confirmation', :to, :message, :event)"
                    ),
                    {
                        "order": event.order_id,
                        "to": event.customer_email,
                        "message": f"<{event.order_id}@test.shop>",
                        "event": ctx.envelope.event_id,
                    },
                )
            self.sent.append(event.order_id)

        return router

    def worker(
        self,
        messaging: MessagingSettings,
        databases: dict[str, str],
        *,
        health_port: int,
        routes: Sequence[OperatorRoute] = (),
        operator_token: str | None = None,
    ) -> Worker:
        """The consumer, and order-service's relay publishing its outbox, in one worker
        whose health port serves the consumer's counts (and ``routes``: notification-service's
        internal API, say, behind ``operator_token``)."""
        engine = create_engine(databases["notification"], pool_size=2)
        transport = create_transport(messaging)
        return Worker(
            messaging,
            transport,
            routers=[self.router(session_factory(engine))],
            relay=Relay(databases["order"], transport),
            health_port=health_port,
            routes=routes,
            operator_token=operator_token,
            on_close=[engine.dispose],
        )
