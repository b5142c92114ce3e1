"""notification-service on the bus: the router its worker runs, as its AsyncAPI document
(``notification-service.json`` in :mod:`shop.contracts.asyncapi`) states it. It publishes
nothing."""

from __future__ import annotations

from importlib.metadata import version
from typing import Final

from shop.contracts import Contract
from shop.messaging.asyncapi import ServiceBus, unwired
from shop.notification.handlers import build_router
from shop.notification.settings import NotificationSettings

PUBLISHES: Final[tuple[type[Contract], ...]] = ()
"""Nothing: the service has no outbox (its tables hold only what was sent) and its worker
runs no relay, which its unit tests check."""


def describe() -> ServiceBus:
    """The ``shop.asyncapi`` entry point: the worker's router, built with no notifier and
    the default retry settings (not this machine's environment)."""
    defaults = NotificationSettings.model_construct()
    return ServiceBus(
        name="notification-service",
        version=version("shop-notification"),
        description=(
            "The order e-mails: a confirmation for each order, a receipt with its invoice "
            "once paid, a notice when cancelled, and one for each refund, chargeback or void "
            "of its payment."
        ),
        publishes=PUBLISHES,
        routers=(
            build_router(
                unwired("Notifier"),
                max_attempts=defaults.max_attempts,
                max_in_flight=defaults.max_in_flight,
            ),
        ),
    )
