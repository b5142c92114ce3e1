"""Each service's outbox, as its internal API tells it (``GET /internal/v1/outbox`` on its
worker's port): what waits to be published, how old the oldest of it is, what is scheduled
for later, and how many sent rows are kept."""

from __future__ import annotations

from dataclasses import dataclass

from shop.messaging.internal import OUTBOX_PATH
from shop.ops.internal import operator_port
from shop.ops.services import shop_services
from shop.ops.settings import OpsSettings


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
    async with operator_port(settings, service) as port:
        status = await port.get(OUTBOX_PATH)
    return OutboxStatus(
        service=service,
        unsent=int(status["unsent"]),
        oldest_unsent_age_seconds=float(status["oldest_unsent_age_seconds"]),
        scheduled=int(status["scheduled"]),
        sent_kept=int(status["sent_kept"]),
    )


async def outbox_status(settings: OpsSettings) -> list[OutboxStatus]:
    """The outbox of every service that publishes (those that do not have none), by name."""
    return [
        await service_outbox_status(settings, service.name)
        for service in shop_services()
        if service.has_outbox
    ]
