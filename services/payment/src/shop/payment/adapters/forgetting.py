"""Forgetting a customer in payment-service's store, on request (``shopctl forget-customer``):
payment-service keeps no customer's name or address of its own, but the gateways'
notifications are kept as they arrived (``payment_events.raw_body``), and a gateway's body
may carry what the customer gave it. The bodies of the notifications about the customer's
orders are erased; what the webhook read from them (amount, meaning, the gateway's ids)
stays, and so do the payments. No one reads a body again once its signature was checked.

Idempotent: a body erased already is not counted again."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import asdict, dataclass

from sqlalchemy import update
from sqlalchemy.ext.asyncio import AsyncSession

from shop.messaging.deadletter_table import forget_in_dead_letters
from shop.payment.adapters.tables import payment_events

ERASED: bytes = b""
"""What an erased notification's body is left as (the column is NOT NULL)."""


@dataclass(frozen=True, slots=True)
class Forgotten:
    """What forgetting one customer changed, in rows."""

    gateway_notifications: int
    dead_letters: int

    def document(self) -> dict[str, int]:
        return asdict(self)


async def forget_customer(
    session: AsyncSession, email: str, order_ids: Sequence[uuid.UUID]
) -> Forgotten:
    """Erase the gateways' bodies about ``order_ids`` (the customer's orders), and forget
    ``email`` in the dead letters about them (an OrderCreated that could not open its
    payment names the customer), in the session's transaction (the caller commits)."""
    erased = await session.execute(
        update(payment_events)
        .where(payment_events.c.order_id.in_(order_ids), payment_events.c.raw_body != ERASED)
        .values(raw_body=ERASED)
        .returning(payment_events.c.id)
    )
    letters = await forget_in_dead_letters(session, email, [str(id_) for id_ in order_ids])
    return Forgotten(gateway_notifications=len(erased.all()), dead_letters=letters)
