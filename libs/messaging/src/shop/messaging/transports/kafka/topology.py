"""What a Kafka consumer needs on the broker, by name: its consumer group, the event topics
its subscribers read, its delay topics (one per nominal retry delay) and its dead-letter
topic. The transport declares them; the consumer subscribes to them."""

from __future__ import annotations

from aiokafka.admin import NewTopic

from shop.messaging.naming import Naming
from shop.messaging.subscriber import Router


def group_id(naming: Naming, group: str) -> str:
    """The Kafka consumer group of a consumer, behind the namespace if any."""
    return f"{naming.namespace}-{group}" if naming.namespace else group


def dead_letter_collector_group(naming: Naming, group: str) -> str:
    """The Kafka consumer group that collects a consumer's dead letters into its store."""
    return f"{group_id(naming, group)}-dead-letters"


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
    """The topics the consumer reads: event topics and delay topics (its dead-letter topic,
    made with a retention of its own, is :meth:`Naming.dead_letters`)."""
    return [*event_topics(naming, router), *delay_topics(naming, router)]


def dead_letter_topic(
    name: str, *, partitions: int, replication_factor: int, retention_ms: int
) -> NewTopic:
    """A consumer's dead-letter topic as it is created: its ``retention.ms`` explicit,
    never the broker's default (letters wait there for the worker to collect them)."""
    return NewTopic(
        name,
        num_partitions=partitions,
        replication_factor=replication_factor,
        topic_configs={"retention.ms": str(retention_ms)},
    )
