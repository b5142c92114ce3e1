"""KEDA scales each worker on the backlog of what that worker consumes, named as the code
names it: its consumer group and topics on Kafka (from the service's own router), its
queue on SQS, at the bus the worker itself is given. Topics have at least as many
partitions as a worker may have replicas."""

from __future__ import annotations

import copy

import pytest

from shop.messaging.naming import Naming
from shop.messaging.transports.kafka.topology import event_topics, group_id

from .manifests import Manifest, of_kind
from .manifests import named as named_object
from .shop_k8s import Running, bus_of, main_processes


def _workers(objects: list[Manifest]) -> list[Running]:
    return [r for r in main_processes(objects) if r.process.role == "worker"]


def _scaled(objects: list[Manifest], running: Running) -> Manifest:
    return named_object(objects, "ScaledObject", running.workload["metadata"]["name"])


def expected_kafka_triggers(running: Running) -> set[tuple[str, str]]:
    """(consumer group, topic) of every topic whose backlog waits for this worker: the
    event topics its subscribers read and its 0 s delay topic (redriven dead letters)."""
    messaging = running.messaging
    naming = Naming(messaging.namespace)
    found = set()
    for router in bus_of(running.process).routers:
        group = group_id(naming, router.group)
        found |= {(group, topic) for topic in event_topics(naming, router)}
        found.add((group, naming.delay_topic(router.group, 0)))
    return found


def trigger_problems(objects: list[Manifest]) -> list[str]:
    problems = []
    for running in _workers(objects):
        messaging = running.messaging
        triggers = _scaled(objects, running)["spec"]["triggers"]
        name = running.workload["metadata"]["name"]
        if messaging.transport == "kafka":
            problems += _kafka_problems(name, running, triggers)
        elif messaging.transport == "sqs":
            problems += _sqs_problems(name, running, triggers, objects)
        else:
            problems.append(f"{name}: runs on {messaging.transport}")
    return problems


def _kafka_problems(name: str, running: Running, triggers: list[Manifest]) -> list[str]:
    kafka = running.messaging.kafka
    watched = set()
    problems = []
    for trigger in triggers:
        metadata = trigger["metadata"]
        if trigger["type"] != "kafka":
            problems.append(f"{name}: a {trigger['type']} trigger on Kafka")
            continue
        watched.add((metadata["consumerGroup"], metadata["topic"]))
        if metadata["bootstrapServers"] != kafka.bootstrap_servers:
            problems.append(f"{name}: KEDA asks {metadata['bootstrapServers']}")
        # KEDA's operator runs in a namespace of its own: a bare Service name would be
        # looked up there.
        for address in metadata["bootstrapServers"].split(","):
            if "." not in address.rpartition(":")[0]:
                problems.append(f"{name}: {address} is not namespace-qualified")
        if int(metadata["lagThreshold"]) < 1:
            problems.append(f"{name}: no lag threshold")
        # A new group's consumer starts at the earliest offset: KEDA must count alike.
        if metadata.get("offsetResetPolicy") != "earliest":
            problems.append(f"{name}: KEDA counts a new group's lag from the latest offset")
    expected = expected_kafka_triggers(running)
    problems += [f"{name}: does not watch {pair}" for pair in sorted(expected - watched)]
    problems += [f"{name}: watches {pair}, not its work" for pair in sorted(watched - expected)]
    return problems


def _sqs_problems(
    name: str, running: Running, triggers: list[Manifest], objects: list[Manifest]
) -> list[str]:
    sqs = running.messaging.sqs
    naming = Naming(running.messaging.namespace)
    queues = {naming.queue(router.group) for router in bus_of(running.process).routers}
    watched = set()
    problems = []
    for trigger in triggers:
        metadata = trigger["metadata"]
        if trigger["type"] != "aws-sqs-queue":
            problems.append(f"{name}: a {trigger['type']} trigger on SQS")
            continue
        watched.add(metadata["queueURL"])
        if metadata["awsRegion"] != sqs.region:
            problems.append(f"{name}: KEDA looks in {metadata['awsRegion']}, not {sqs.region}")
        if int(metadata["queueLength"]) < 1:
            problems.append(f"{name}: no queue length")
        auth = trigger.get("authenticationRef", {}).get("name")
        if auth not in {a["metadata"]["name"] for a in of_kind(objects, "TriggerAuthentication")}:
            problems.append(f"{name}: KEDA has no way to read the queue ({auth})")
    if watched != queues:
        problems.append(f"{name}: watches {sorted(watched)}, its queue is {sorted(queues)}")
    return problems


def test_each_worker_scales_on_the_backlog_of_what_it_consumes(objects: list[Manifest]) -> None:
    assert trigger_problems(objects) == []


def test_a_trigger_on_the_wrong_topic_or_group_is_caught(objects: list[Manifest]) -> None:
    changed = copy.deepcopy(objects)
    running = next(r for r in _workers(changed) if r.process.kind == "payment-worker")
    trigger = _scaled(changed, running)["spec"]["triggers"][0]
    if trigger["type"] == "kafka":
        trigger["metadata"]["topic"] = "shop-order-created"
        expected = "payment-worker: watches"
    else:
        trigger["metadata"]["queueURL"] = "shop-payment-service"
        expected = "payment-worker: watches ['shop-payment-service']"

    assert any(problem.startswith(expected) for problem in trigger_problems(changed))


def capacity_problems(objects: list[Manifest]) -> list[str]:
    """On Kafka, every process on the bus creates the topics it meets with its own
    partitions setting (the first to start wins): all must agree, and cover the most
    replicas of a worker. The APIs are not on the bus (their worker relays their outbox)."""
    on_kafka = [r for r in main_processes(objects) if r.messaging.transport == "kafka"]
    if not on_kafka:
        return []
    partitions = {r.name: r.messaging.kafka.partitions for r in on_kafka}
    problems = []
    if len(set(partitions.values())) != 1:
        problems.append(f"the processes create topics with different partitions: {partitions}")
    for running in _workers(objects):
        most = int(_scaled(objects, running)["spec"]["maxReplicaCount"])
        if most > min(partitions.values()):
            problems.append(
                f"{running.name}: up to {most} replicas on {min(partitions.values())} partitions"
            )
    return problems


def test_topics_have_a_partition_for_every_worker_replica(objects: list[Manifest]) -> None:
    assert capacity_problems(objects) == []


def test_more_replicas_than_partitions_are_caught(objects: list[Manifest]) -> None:
    if all(r.messaging.transport != "kafka" for r in main_processes(objects)):
        pytest.skip("SQS queues have no partitions")
    changed = copy.deepcopy(objects)
    named_object(changed, "ScaledObject", "order-worker")["spec"]["maxReplicaCount"] = 40

    assert capacity_problems(changed) == [
        "order-worker/order-worker: up to 40 replicas on 12 partitions"
    ]


def test_workers_never_scale_to_zero(objects: list[Manifest]) -> None:
    """Two of them relay their service's outbox: with no replica it would wait for ever,
    and no lag would say so. The third keeps one up for the next order's e-mail."""
    assert all(int(s["spec"]["minReplicaCount"]) >= 1 for s in of_kind(objects, "ScaledObject"))
