"""Each service's outbox, read from its own database: what waits to be published, how old
the oldest of it is, what is scheduled for later, and how many sent rows are kept."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from shop.ops.databases import connected
from shop.ops.services import shop_services
from shop.ops.settings import OpsSettings

# Due and unsent is what the relay has to publish now; a scheduled row counts once it has
# fallen due, and its age from then (as the relay's own backlog gauge counts it).
_STATUS: Final = """
    SELECT
        count(*) FILTER (WHERE published_at IS NULL AND (due_at IS NULL OR due_at <= now())),
        coalesce(extract(epoch FROM now() - min(coalesce(due_at, created_at)) FILTER (
            WHERE published_at IS NULL AND (due_at IS NULL OR due_at <= now())
        )), 0)::float8,
        count(*) FILTER (WHERE published_at IS NULL AND due_at > now()),
        count(*) FILTER (WHERE published_at IS NOT NULL)
    FROM outbox
"""


@dataclass(frozen=True, slots=True)
class OutboxStatus:
    service: str
    unsent: int
    """Rows due and not yet published: the relay's backlog."""
    oldest_unsent_age_seconds: float
    """Age of the oldest of them (0 when there is none)."""
    scheduled: int
    """Rows due later (a payment deadline, say): not a backlog."""
    sent_kept: int
    """Published rows kept until the retention cleanup deletes them."""


async def service_outbox_status(settings: OpsSettings, service: str) -> OutboxStatus:
    """The outbox of one service."""
    async with connected(settings, service) as connection:
        unsent, age, scheduled, sent = await connection.fetchrow(_STATUS)
    return OutboxStatus(
        service=service,
        unsent=int(unsent),
        oldest_unsent_age_seconds=float(age),
        scheduled=int(scheduled),
        sent_kept=int(sent),
    )


async def outbox_status(settings: OpsSettings) -> list[OutboxStatus]:
    """The outbox of every service that publishes (those that do not have none), by name."""
    return [
        await service_outbox_status(settings, service.name)
        for service in shop_services()
        if service.has_outbox
    ]
