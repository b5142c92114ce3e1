"""The shop's services as their AsyncAPI documents describe them: each one's consumer groups,
the topics each group reads, and what the service publishes (so whether it has an outbox).

The documents are the ones the contracts library ships (:mod:`shop.contracts.asyncapi`),
held to the services' code by ``make test``: this library reads them and never a service's
code, so it installs no service and names no topic or group by hand. A document names
everything as a stack without a namespace does; its server's description says that a
deployment's namespace prefixes every topic and consumer group (:func:`in_namespace`).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote

from shop.contracts.asyncapi import (
    DEAD_LETTER_TOPIC_TAG,
    DELAY_TOPIC_TAG,
    read_document,
    services,
)


@dataclass(frozen=True, slots=True)
class ConsumerGroupOf:
    """One consumer of the shop: its group, the service whose worker runs it, and the Kafka
    topics it reads, as the documents name them (without a namespace)."""

    service: str
    group: str
    event_topics: tuple[str, ...] = ()
    """The topics of the contracts its subscribers handle."""
    delay_topics: tuple[str, ...] = ()
    """Its own delay topics: its retries, and (``-retry-0s``) its redriven dead letters."""


@dataclass(frozen=True, slots=True)
class ShopService:
    name: str
    """``order-service``: also the key of its settings (database, worker)."""
    consumers: tuple[ConsumerGroupOf, ...]
    publishes: tuple[str, ...]
    """The topics of the contracts it adds to its outbox."""

    @property
    def groups(self) -> tuple[str, ...]:
        return tuple(consumer.group for consumer in self.consumers)

    @property
    def has_outbox(self) -> bool:
        """Only a service that publishes keeps an outbox (notification-service has none)."""
        return bool(self.publishes)


def in_namespace(namespace: str, name: str) -> str:
    """A topic or group ``name`` of the documents as a deployment behind ``namespace`` has
    it: ``<namespace>-<name>``, the name itself when there is no namespace."""
    return f"{namespace}-{name}" if namespace else name


def describe(document: Mapping[str, Any]) -> ShopService:
    """The service an AsyncAPI 3 document of the shop describes."""
    name = str(document["info"]["title"])
    channels: Mapping[str, Any] = document.get("channels", {})
    published: set[str] = set()
    event_topics: dict[str, set[str]] = {}
    delay_topics: dict[str, set[str]] = {}
    for operation in document.get("operations", {}).values():
        address = _address(channels, operation)
        tags = {tag["name"] for tag in operation.get("tags", [])}
        if operation["action"] == "send":
            if DEAD_LETTER_TOPIC_TAG not in tags:
                published.add(address)
            continue
        group = _group(operation)
        event_topics.setdefault(group, set())
        delay_topics.setdefault(group, set())
        (delay_topics if DELAY_TOPIC_TAG in tags else event_topics)[group].add(address)
    consumers = tuple(
        ConsumerGroupOf(
            service=name,
            group=group,
            event_topics=tuple(sorted(event_topics[group])),
            delay_topics=tuple(sorted(delay_topics[group])),
        )
        for group in sorted(event_topics)
    )
    return ShopService(name=name, consumers=consumers, publishes=tuple(sorted(published)))


def _address(channels: Mapping[str, Any], operation: Mapping[str, Any]) -> str:
    reference = str(operation["channel"]["$ref"])
    # A JSON Pointer in a URI fragment: percent-encoded, then ~1 for "/" and ~0 for "~".
    name = unquote(reference.removeprefix("#/channels/")).replace("~1", "/").replace("~0", "~")
    return str(channels[name]["address"])


def _group(operation: Mapping[str, Any]) -> str:
    """The consumer group of a ``receive`` operation, from its Kafka binding."""
    try:
        [group] = operation["bindings"]["kafka"]["groupId"]["enum"]
    except (KeyError, ValueError) as error:
        raise ValueError(f"a receive operation names no one consumer group: {operation}") from error
    return str(group)


@functools.cache
def shop_services() -> tuple[ShopService, ...]:
    """Every service of the shop, in name order."""
    return tuple(describe(read_document(service)) for service in services())


def consumer_groups() -> list[ConsumerGroupOf]:
    """Every consumer group of the shop, by service then group."""
    return [consumer for service in shop_services() for consumer in service.consumers]


def service_of(group: str) -> str:
    """The service whose worker runs ``group`` (the group itself when none does)."""
    for consumer in consumer_groups():
        if consumer.group == group:
            return consumer.service
    return group
