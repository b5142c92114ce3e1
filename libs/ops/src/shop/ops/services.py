"""The shop's services as they describe themselves on the bus: each one's consumer groups
(the routers its worker runs) and what it publishes (so whether it has an outbox).

The descriptions come from the ``shop.asyncapi`` entry points, the services' own published
account of their buses, so nothing here names a topic or a group by hand.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from shop.contracts import Contract
from shop.messaging.asyncapi import discover
from shop.messaging.subscriber import Router


@dataclass(frozen=True, slots=True)
class ShopService:
    name: str
    """``order-service``: also the key of its settings (database, worker)."""
    routers: tuple[Router, ...]
    publishes: tuple[type[Contract], ...]

    @property
    def groups(self) -> tuple[str, ...]:
        return tuple(router.group for router in self.routers)

    @property
    def has_outbox(self) -> bool:
        """Only a service that publishes keeps an outbox (notification-service has none)."""
        return bool(self.publishes)


@dataclass(frozen=True, slots=True)
class ConsumerGroupOf:
    """One consumer of the shop: its group, the service whose worker runs it, its router."""

    service: str
    group: str
    router: Router


@functools.cache
def shop_services() -> tuple[ShopService, ...]:
    """Every service installed beside this library, in name order."""
    return tuple(
        ShopService(name=bus.name, routers=bus.routers, publishes=bus.publishes)
        for bus in discover()
    )


def consumer_groups() -> list[ConsumerGroupOf]:
    """Every consumer group of the shop, by service then group."""
    return [
        ConsumerGroupOf(service=service.name, group=router.group, router=router)
        for service in shop_services()
        for router in service.routers
    ]


def service_of(group: str) -> str:
    """The service whose worker runs ``group`` (the group itself when none does)."""
    for consumer in consumer_groups():
        if consumer.group == group:
            return consumer.service
    return group
