"""What each Kafka principal may do, as a cluster with Strimzi's `simple` authorization
would decide it from the overlay's KafkaUsers, and what each service's processes need,
from the service's own description of its bus (its AsyncAPI entry point)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from importlib.metadata import entry_points
from typing import Literal

from shop.contracts import ALL_CONTRACTS
from shop.messaging.asyncapi import ServiceBus
from shop.messaging.naming import Naming
from shop.messaging.transports.kafka.topology import (
    dead_letter_collector_group,
    delay_topics,
    group_id,
    topics_of,
)

from .manifests import Manifest, of_kind

Operation = Literal["Read", "Write", "Create", "Describe"]
ResourceType = Literal["topic", "group"]

CONSOLE = "console"
IMPLIES_DESCRIBE = {"Read", "Write", "Delete", "Alter"}
"""Kafka's rule: any of these on a resource allows Describe on it too."""


@dataclass(frozen=True)
class Rule:
    """One allow rule of a KafkaUser: an operation on a topic or group, by its literal name
    or by a prefix of names."""

    resource: str
    name: str
    prefix: bool
    operation: str

    def matches(self, resource: str, name: str) -> bool:
        if resource != self.resource:
            return False
        return name.startswith(self.name) if self.prefix else name == self.name

    def allows(self, operation: str, resource: str, name: str) -> bool:
        if not self.matches(resource, name):
            return False
        return operation == self.operation or (
            operation == "Describe" and self.operation in IMPLIES_DESCRIBE
        )


def granted(objects: list[Manifest]) -> dict[str, set[Rule]]:
    """Each principal's allow rules, as the overlay's KafkaUsers give them."""
    rules: dict[str, set[Rule]] = {}
    for user in of_kind(objects, "KafkaUser"):
        mine = rules.setdefault(user["metadata"]["name"], set())
        for acl in user["spec"]["authorization"]["acls"]:
            if acl.get("type", "allow") != "allow":
                raise ValueError(f"{user['metadata']['name']}: deny rules are not modelled")
            resource = acl["resource"]
            for operation in acl["operations"]:
                mine.add(
                    Rule(
                        resource["type"],
                        resource["name"],
                        resource.get("patternType", "literal") == "prefix",
                        operation,
                    )
                )
    return rules


def allowed(rules: Iterable[Rule], operation: str, resource: str, name: str) -> bool:
    return any(rule.allows(operation, resource, name) for rule in rules)


def service_buses() -> list[ServiceBus]:
    """Every service's description of its bus."""
    return [entry_point.load()() for entry_point in entry_points(group="shop.asyncapi")]


@dataclass(frozen=True)
class Need:
    """An operation a principal's processes perform on a topic or group."""

    principal: str
    operation: Operation
    resource: ResourceType
    name: str


def needs(namespace: str) -> set[Need]:
    """Everything the shop's processes do on the bus, by principal: each service reads its
    group and the topics its consumer needs (event, delay and dead-letter topics), writes
    the topics it publishes and its own delay and dead-letter topics (retries, redrives,
    settled dead letters), and creates every message type's topic and its own; the console
    describes each group and the topics whose lag it reads."""
    naming = Naming(namespace)
    every_contract = {naming.topic(contract) for contract in ALL_CONTRACTS}
    found: set[Need] = set()
    for bus in service_buses():
        created = set(every_contract)
        for contract in bus.publishes:
            found.add(Need(bus.name, "Write", "topic", naming.topic(contract)))
        for router in bus.routers:
            group = group_id(naming, router.group)
            found.add(Need(bus.name, "Read", "group", group))
            # The worker's collector reads the consumer's dead letters into its store.
            found.add(
                Need(bus.name, "Read", "group", dead_letter_collector_group(naming, router.group))
            )
            found.add(Need(CONSOLE, "Describe", "group", group))
            consumed = topics_of(naming, router)
            for topic in consumed:
                found.add(Need(bus.name, "Read", "topic", topic))
                found.add(Need(CONSOLE, "Describe", "topic", topic))
            own = [*delay_topics(naming, router), naming.dead_letters(router.group)]
            found |= {Need(bus.name, "Write", "topic", topic) for topic in own}
            created |= set(consumed)
        found |= {Need(bus.name, "Create", "topic", topic) for topic in created}
    return found


def unmet(objects: list[Manifest], namespace: str) -> list[str]:
    """What a process needs and its principal may not do."""
    rules = granted(objects)
    return sorted(
        f"{need.principal} may not {need.operation} {need.resource} {need.name}"
        for need in needs(namespace)
        if not allowed(rules.get(need.principal, ()), need.operation, need.resource, need.name)
    )


def writers(objects: list[Manifest], topic: str) -> set[str]:
    return {
        principal
        for principal, rules in granted(objects).items()
        if allowed(rules, "Write", "topic", topic)
    }


def readers(objects: list[Manifest], resource: ResourceType, name: str) -> set[str]:
    return {
        principal
        for principal, rules in granted(objects).items()
        if allowed(rules, "Read", resource, name)
    }
