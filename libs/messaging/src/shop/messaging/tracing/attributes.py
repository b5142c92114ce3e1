"""Names the shop gives its spans' attributes and events, beside OpenTelemetry's messaging
conventions: the spans' writer, and whoever reads them back (shop.ops, the span file of
shop.devstack), use these constants."""

from __future__ import annotations

from typing import Final

PROCESS_KIND: Final = "shop.process.kind"
"""Resource attribute: which of a service's processes made a span (``api``, ``worker``…)."""
MESSAGE_KEY: Final = "shop.message.key"
"""Span attribute: the message's aggregate key (an order's id for the order events), by
which one order's traces are found."""
MESSAGE_TYPE: Final = "shop.message.type"
ATTEMPT: Final = "shop.message.attempt"
SUBSCRIBER: Final = "shop.subscriber"
DUPLICATE: Final = "shop.message.duplicate"
CONSUMER_GROUP: Final = "messaging.consumer.group.name"
RETRY_DELAY: Final = "shop.retry.delay_seconds"
RETRY_SCHEDULED: Final = "retry scheduled"
"""The CONSUMER span's event of a failed try that will be tried again."""
DEAD_LETTERED: Final = "dead-lettered"
