"""What a Kafka consumer needs on the broker, by name: its consumer group, the event topics
its subscribers read, its delay topics (one per nominal retry delay) and its dead-letter
topic. The transport declares them; the consumer subscribes to them."""

from __future__ import annotations

from shop.messaging.naming import Naming
from shop.messaging.subscriber import Router


def group_id(naming: Naming, group: str) -> str:
    """The Kafka consumer group of a consumer, behind the namespace if any."""
    return f"{naming.namespace}-{group}" if naming.namespace else group


def delay_seconds(router: Router) -> list[float]:
    """The nominal delays of the consumer's delay topics: 0 s (redrives) and every nominal
    delay any subscriber's retry policy can ask for."""
    delays = {0.0}
    for subscriber in router:
        delays.update(subscriber.retry.nominal_delays())
    return sorted(delays)


def event_topics(naming: Naming, router: Router) -> list[str]:
    """The topics of the message types the consumer's subscribers handle."""
    return sorted({naming.topic(subscriber.contract) for subscriber in router})


def delay_topics(naming: Naming, router: Router) -> list[str]:
    return sorted({naming.delay_topic(router.group, s) for s in delay_seconds(router)})


def topics_of(naming: Naming, router: Router) -> list[str]:
    """Every topic the consumer needs: event topics, delay topics, dead-letter topic."""
    return [
        *event_topics(naming, router),
        *delay_topics(naming, router),
        naming.dead_letters(router.group),
    ]
