"""Forgetting a customer in notification-service's store, on request (``shopctl
forget-customer``): the record of each e-mail sent stays (it is what keeps a redelivered
event from sending it twice), but no longer says to whom. The e-mails themselves are not
kept, only their Message-IDs, which name the order, not the customer. The dead letters about
the customer's orders (an order's events, with the address) are rewritten to name no one.

Idempotent: a second time, no record names the address any more."""

from __future__ import annotations

import uuid
from collections.abc import Collection
from dataclasses import asdict, dataclass

from sqlalchemy import func, update
from sqlalchemy.ext.asyncio import AsyncSession

from shop.messaging.deadletter_table import forget_in_dead_letters
from shop.messaging.privacy import FORGOTTEN_EMAIL
from shop.notification.adapters.tables import order_notifications


@dataclass(frozen=True, slots=True)
class Forgotten:
    """What forgetting one customer changed, in rows."""

    sent_emails: int
    dead_letters: int

    def document(self) -> dict[str, int]:
        return asdict(self)


async def forget_customer(
    session: AsyncSession, email: str, order_ids: Collection[uuid.UUID]
) -> Forgotten:
    """The records of the e-mails sent to ``email`` (any case) anonymised, and the dead
    letters about ``order_ids`` (the customer's orders) that name them, in the session's
    transaction (the caller commits)."""
    changed = await session.execute(
        update(order_notifications)
        .where(func.lower(order_notifications.c.recipient) == email.lower())
        .values(recipient=FORGOTTEN_EMAIL)
        .returning(order_notifications.c.order_id)
    )
    letters = await forget_in_dead_letters(session, email, [str(id_) for id_ in order_ids])
    return Forgotten(sent_emails=len(changed.all()), dead_letters=letters)
