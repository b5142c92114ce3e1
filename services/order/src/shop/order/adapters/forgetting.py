"""Forgetting a customer in order-service's store, on request (``shopctl forget-customer``):
their orders stay, with their lines, totals and states, for the shop's books, but no longer
say who placed them. The address becomes :data:`~shop.messaging.privacy.FORGOTTEN_EMAIL`,
and the customer's id one of the order's own, so that the forgotten orders cannot be linked
to each other or read with the customer's token; the customer's idempotency keys (their id
and the answers kept for replays) are deleted, and the messages the outbox still keeps (and its
dead letters) say the same as the orders.

Only the orders named (those the other services were asked about first), and idempotent:
a second time, nothing names the address any more, and nothing changes."""

from __future__ import annotations

import uuid
from collections.abc import Collection
from dataclasses import asdict, dataclass
from typing import Any

from sqlalchemy import delete, func, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from shop.messaging.deadletter_table import forget_in_dead_letters
from shop.messaging.privacy import FORGOTTEN_CUSTOMER, FORGOTTEN_EMAIL, forgotten_in_message
from shop.messaging.schema import outbox
from shop.order.adapters.tables import idempotency_keys, orders


@dataclass(frozen=True, slots=True)
class Forgotten:
    """What forgetting one customer changed, in rows."""

    orders: int
    outbox_messages: int
    idempotency_keys: int
    dead_letters: int

    def document(self) -> dict[str, int]:
        return asdict(self)


def _of(email: str) -> Any:
    return func.lower(orders.c.customer_email) == email.lower()


async def orders_of(session: AsyncSession, email: str) -> list[uuid.UUID]:
    """The ids of the orders placed with ``email`` (any case), oldest first."""
    statement = select(orders.c.id).where(_of(email)).order_by(orders.c.created_at, orders.c.id)
    return list((await session.execute(statement)).scalars())


async def forget_customer(
    session: AsyncSession, email: str, order_ids: Collection[uuid.UUID]
) -> Forgotten:
    """Anonymise the customer of ``email`` in those of ``order_ids`` that name them, in the
    session's transaction (the caller commits). Only the orders listed: the other services
    were asked to forget those, and an order placed since is theirs to forget first
    (:func:`orders_of` says which are left)."""
    if not order_ids:
        return Forgotten(orders=0, outbox_messages=0, idempotency_keys=0, dead_letters=0)
    placed = (
        await session.execute(
            select(orders.c.id, orders.c.customer_id)
            .where(_of(email), orders.c.id.in_(order_ids))
            .with_for_update()
        )
    ).all()
    customers = {row.customer_id for row in placed}
    keys = 0
    if customers:
        deleted = await session.execute(
            delete(idempotency_keys)
            .where(idempotency_keys.c.customer_id.in_(customers))
            .returning(idempotency_keys.c.key)
        )
        keys = len(deleted.all())
        await session.execute(
            update(orders)
            .where(orders.c.id.in_([row.id for row in placed]))
            .values(
                customer_email=FORGOTTEN_EMAIL,
                customer_id=func.concat(FORGOTTEN_CUSTOMER, orders.c.id),
            )
        )
    messages = await _forget_in_outbox(session, email, [row.id for row in placed])
    letters = await forget_in_dead_letters(session, email, [str(row.id) for row in placed])
    return Forgotten(
        orders=len(placed), outbox_messages=messages, idempotency_keys=keys, dead_letters=letters
    )


async def _forget_in_outbox(session: AsyncSession, email: str, order_ids: list[uuid.UUID]) -> int:
    """Rewrite the kept messages about those orders that name ``email``: sent ones (kept
    for inspection) and unsent ones alike, which then go out naming no one."""
    if not order_ids:
        return 0
    rows = (
        await session.execute(
            select(outbox.c.id, outbox.c.body)
            .where(outbox.c.key.in_([str(order_id) for order_id in order_ids]))
            .with_for_update()
        )
    ).all()
    changed = 0
    for row in rows:
        body = forgotten_in_message(row.body, email)
        if body is not None:
            await session.execute(update(outbox).where(outbox.c.id == row.id).values(body=body))
            changed += 1
    return changed
