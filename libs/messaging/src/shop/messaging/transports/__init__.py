"""Transports, chosen by configuration: ``kafka``, ``sqs`` or ``memory`` (the shape they
share is described in :mod:`shop.messaging.transports.base`)."""

from __future__ import annotations

from shop.messaging.naming import Naming
from shop.messaging.settings import MessagingSettings
from shop.messaging.transports.base import Consumer, ConsumerOptions, Transport

__all__ = ["Consumer", "ConsumerOptions", "Transport", "create_transport"]


def create_transport(settings: MessagingSettings) -> Transport:
    """The transport ``settings.transport`` names (imported lazily: a memory-only test run
    does not load the Kafka or AWS clients)."""
    naming = Naming(settings.namespace)
    kept = settings.dead_letters.broker_retention_seconds
    if settings.transport == "kafka":
        from shop.messaging.transports.kafka import KafkaTransport  # noqa: PLC0415

        return KafkaTransport(settings.kafka, naming, dead_letter_retention_seconds=kept)
    if settings.transport == "sqs":
        from shop.messaging.transports.sqs import SqsTransport  # noqa: PLC0415

        return SqsTransport(settings.sqs, naming, dead_letter_retention_seconds=kept)
    from shop.messaging.transports.memory import MemoryTransport  # noqa: PLC0415

    return MemoryTransport(naming=naming)
