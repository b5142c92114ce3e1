"""The bus knows who each process is and lets it do only what it needs: every process on
Kafka logs in as its service's principal with SCRAM-SHA-512 over TLS (production refuses
PLAINTEXT and SASL without TLS); each principal's rights (Strimzi's KafkaUsers) are what
its processes need and nothing more, so that only payment-service writes payment.* topics,
only order-service order.* topics, and each consumer group and its topics are read by its
own service only; KEDA reads each worker's lag with that worker's login."""

from __future__ import annotations

import copy
from pathlib import PurePosixPath

import pytest
from pydantic import ValidationError

from shop.contracts import ALL_CONTRACTS
from shop.messaging.naming import Naming
from shop.messaging.transports.kafka.topology import group_id, topics_of

from .kafka_rights import CONSOLE, allowed, granted, needs, readers, service_buses, unmet, writers
from .manifests import Manifest, SecretKey, of_kind, pod_spec
from .manifests import named as named_object
from .repository import overlays
from .shop_k8s import Running, overlay_objects, shop_containers

PRINCIPAL_OF = {
    "shop.order": "order-service",
    "shop.payment": "payment-service",
    "shop.notification": "notification-service",
    "shop.console": CONSOLE,
}
"""The principal each package's processes log in as: its service's, the console's own."""
CLUSTER_CA = SecretKey("kafka-cluster-ca", "ca.crt")


def on_kafka(objects: list[Manifest]) -> list[Running]:
    return [r for r in shop_containers(objects) if r.messaging.transport == "kafka"]


def _variable(running: Running, suffix: str) -> str:
    (variable,) = [name for name in running.env if name.endswith(f"_MESSAGING__KAFKA__{suffix}")]
    return variable


def _mounted_secret(running: Running, path: PurePosixPath) -> SecretKey | None:
    """The Secret's key a file of the container comes from, if a Secret volume holds it."""
    volumes = {v["name"]: v for v in pod_spec(running.workload).get("volumes", [])}
    for mount in running.container.get("volumeMounts", []):
        folder = PurePosixPath(mount["mountPath"])
        secret = volumes.get(mount["name"], {}).get("secret")
        if secret is None or path.parent != folder:
            continue
        for item in secret.get("items", []):
            if item["path"] == path.name:
                return SecretKey(secret["secretName"], item["key"])
    return None


def login_problems(objects: list[Manifest]) -> list[str]:
    problems = []
    for running in on_kafka(objects):
        kafka = running.messaging.kafka
        principal = PRINCIPAL_OF[running.process.package]
        if kafka.security_protocol != "SASL_SSL" or kafka.sasl_mechanism != "SCRAM-SHA-512":
            problems.append(f"{running.name}: {kafka.security_protocol} {kafka.sasl_mechanism}")
        if kafka.sasl_username != principal:
            problems.append(f"{running.name}: logs in as {kafka.sasl_username}, not {principal}")
        password = running.env.get(_variable(running, "SASL_PASSWORD"))
        if password != SecretKey(principal, "password"):
            problems.append(f"{running.name}: its password is {password}")
        ca = None if kafka.ssl_cafile is None else PurePosixPath(str(kafka.ssl_cafile))
        if ca is None or _mounted_secret(running, ca) != CLUSTER_CA:
            problems.append(f"{running.name}: the cluster's CA is not at {ca}")
    return problems


def test_every_process_on_kafka_logs_in_as_its_principal_over_tls(
    objects: list[Manifest],
) -> None:
    assert login_problems(objects) == []


def test_a_process_with_another_s_login_or_no_ca_is_caught() -> None:
    changed = copy.deepcopy(overlay_objects("prod"))
    worker = pod_spec(named_object(changed, "Deployment", "payment-worker"))["containers"][0]
    for variable in worker["env"]:
        if variable["name"] == "SHOP_PAYMENT_MESSAGING__KAFKA__SASL_PASSWORD":
            variable["valueFrom"]["secretKeyRef"]["name"] = "order-service"
    worker["volumeMounts"] = [m for m in worker["volumeMounts"] if m["name"] != "kafka-ca"]

    problems = [p for p in login_problems(changed) if p.startswith("payment-worker/payment-worker")]

    assert problems == [
        "payment-worker/payment-worker: its password is SecretKey(name='order-service', "
        "key='password')",
        "payment-worker/payment-worker: the cluster's CA is not at /etc/shop/kafka-ca/ca.crt",
    ]


@pytest.mark.parametrize("protocol", [None, "PLAINTEXT", "SASL_PLAINTEXT"])
def test_production_refuses_a_process_on_kafka_without_tls_or_login(
    objects: list[Manifest], protocol: str | None
) -> None:
    running = next((r for r in on_kafka(objects) if r.process.role == "worker"), None)
    if running is None:
        pytest.skip("this overlay's bus is not Kafka")
    variable = _variable(running, "SECURITY_PROTOCOL")
    # As an overlay that left the bus as it was: no protocol, no CA (TLS files with a
    # protocol without TLS are refused anywhere, before production's checks).
    dropped = {variable, _variable(running, "SSL_CAFILE")}
    env = {name: value for name, value in running.env.items() if name not in dropped}
    if protocol is not None:
        env[variable] = protocol

    with pytest.raises(ValidationError, match=f"{variable} is {protocol or 'PLAINTEXT'}"):
        Running(running.workload, running.container, running.process, env).settings()


def test_an_overlay_on_sqs_carries_no_kafka_login() -> None:
    objects = overlay_objects("prod-sqs")
    kafka_variables = [
        f"{r.name}: {name}"
        for r in shop_containers(objects)
        for name in r.env
        if "_MESSAGING__KAFKA__" in name
    ]

    assert kafka_variables == []
    assert of_kind(objects, "KafkaUser") == []


# -- the principals' rights (Strimzi's KafkaUsers) -------------------------------------------

WITH_PRINCIPALS = [name for name in overlays() if of_kind(overlay_objects(name), "KafkaUser")]


def _namespace(objects: list[Manifest]) -> str:
    return str(named_object(objects, "ConfigMap", _bus_config(objects))["data"]["NAMESPACE"])


def _bus_config(objects: list[Manifest]) -> str:
    (name,) = [
        c["metadata"]["name"]
        for c in of_kind(objects, "ConfigMap")
        if c["metadata"]["name"].startswith("shop-bus")
    ]
    return str(name)


def unused(objects: list[Manifest], namespace: str) -> list[str]:
    """Rules no process of their principal needs: a right too many."""
    wanted = needs(namespace)
    return sorted(
        f"{principal}: {rule.operation} {rule.resource} {rule.name}"
        for principal, rules in granted(objects).items()
        for rule in rules
        if not any(
            need.principal == principal and rule.allows(need.operation, need.resource, need.name)
            for need in wanted
        )
    )


def test_only_production_on_kafka_names_the_principals() -> None:
    assert WITH_PRINCIPALS == ["prod"]


@pytest.mark.parametrize("overlay", WITH_PRINCIPALS)
def test_a_principal_per_service_and_one_for_the_console(overlay: str) -> None:
    objects = overlay_objects(overlay)

    assert set(granted(objects)) == {bus.name for bus in service_buses()} | {CONSOLE}
    users = of_kind(objects, "KafkaUser")
    assert {u["spec"]["authentication"]["type"] for u in users} == {"scram-sha-512"}
    assert {u["spec"]["authorization"]["type"] for u in users} == {"simple"}


@pytest.mark.parametrize("overlay", WITH_PRINCIPALS)
def test_the_principals_belong_to_the_cluster_the_processes_reach(overlay: str) -> None:
    objects = overlay_objects(overlay)
    data = named_object(objects, "ConfigMap", _bus_config(objects))["data"]
    host = str(data["KAFKA__BOOTSTRAP_SERVERS"]).split(":")[0]
    users = of_kind(objects, "KafkaUser")
    clusters = {user["metadata"]["labels"]["strimzi.io/cluster"] for user in users}

    assert len(clusters) == 1
    assert all(host.startswith(f"{cluster}-kafka-bootstrap.") for cluster in clusters)


@pytest.mark.parametrize("overlay", WITH_PRINCIPALS)
def test_each_principal_may_do_exactly_what_its_processes_need(overlay: str) -> None:
    objects = overlay_objects(overlay)
    namespace = _namespace(objects)

    assert unmet(objects, namespace) == []
    assert unused(objects, namespace) == []


@pytest.mark.parametrize("overlay", WITH_PRINCIPALS)
def test_only_the_service_that_publishes_a_message_type_writes_its_topic(overlay: str) -> None:
    objects = overlay_objects(overlay)
    naming = Naming(_namespace(objects))
    publisher = {
        naming.topic(contract): bus.name for bus in service_buses() for contract in bus.publishes
    }

    for contract in ALL_CONTRACTS:
        topic = naming.topic(contract)
        assert writers(objects, topic) == ({publisher[topic]} if topic in publisher else set())
    for family, service in (("payment.", "payment-service"), ("order.", "order-service")):
        topics = [naming.topic(c) for c in ALL_CONTRACTS if c.message_type.startswith(family)]
        assert topics
        assert {w for topic in topics for w in writers(objects, topic)} == {service}


@pytest.mark.parametrize("overlay", WITH_PRINCIPALS)
def test_each_group_and_its_topics_are_read_by_their_service_only(overlay: str) -> None:
    objects = overlay_objects(overlay)
    naming = Naming(_namespace(objects))
    consumers: dict[str, set[str]] = {}
    for bus in service_buses():
        for router in bus.routers:
            assert readers(objects, "group", group_id(naming, router.group)) == {bus.name}
            for topic in topics_of(naming, router):
                consumers.setdefault(topic, set()).add(bus.name)

    for topic, services in consumers.items():
        assert readers(objects, "topic", topic) == services


@pytest.mark.parametrize("overlay", WITH_PRINCIPALS)
def test_the_console_reads_no_message_and_writes_nothing(overlay: str) -> None:
    rules = granted(overlay_objects(overlay))[CONSOLE]

    assert {rule.operation for rule in rules} == {"Describe"}


def test_a_right_too_many_or_too_few_is_caught() -> None:
    objects = copy.deepcopy(overlay_objects("prod"))
    order = named_object(objects, "KafkaUser", "order-service")
    order["spec"]["authorization"]["acls"].append(
        {
            "resource": {"type": "topic", "name": "prod-shop-payment-received"},
            "operations": ["Write"],
        }
    )
    notification = named_object(objects, "KafkaUser", "notification-service")
    notification["spec"]["authorization"]["acls"] = [
        acl
        for acl in notification["spec"]["authorization"]["acls"]
        if acl["resource"]["type"] != "group"
    ]

    assert writers(objects, "prod-shop-payment-received") == {"order-service", "payment-service"}
    assert unused(objects, "prod") == ["order-service: Write topic prod-shop-payment-received"]
    assert unmet(objects, "prod") == [
        "notification-service may not Read group prod-notification-service",
        "notification-service may not Read group prod-notification-service-dead-letters",
    ]


def test_a_prefix_rule_allows_the_names_it_begins_and_implies_describe() -> None:
    rules = granted(overlay_objects("prod"))["order-service"]

    assert allowed(rules, "Write", "topic", "prod-shop-order-service-retry-2s")
    assert allowed(rules, "Describe", "topic", "prod-shop-order-service-dlq")
    assert not allowed(rules, "Read", "topic", "prod-shop-order-created")
    assert not allowed(rules, "Read", "topic", "prod-shop-payment-service-dlq")


# -- KEDA reads each lag as the worker it scales ---------------------------------------------


def keda_login_problems(objects: list[Manifest]) -> list[str]:
    problems = []
    authentications = {a["metadata"]["name"]: a for a in of_kind(objects, "TriggerAuthentication")}
    for running in on_kafka(objects):
        if running.process.role != "worker":
            continue
        name = running.workload["metadata"]["name"]
        principal = PRINCIPAL_OF[running.process.package]
        for trigger in named_object(objects, "ScaledObject", name)["spec"]["triggers"]:
            where = f"{name}/{trigger.get('name')}"
            metadata = trigger["metadata"]
            if (metadata.get("sasl"), metadata.get("tls")) != ("scram_sha512", "enable"):
                problems.append(f"{where}: sasl {metadata.get('sasl')}, tls {metadata.get('tls')}")
            reference = trigger.get("authenticationRef", {}).get("name")
            authentication = authentications.get(reference)
            if authentication is None:
                problems.append(f"{where}: no TriggerAuthentication {reference}")
                continue
            spec = authentication["spec"]
            given = {e["parameter"]: (e["containerName"], e["name"]) for e in spec.get("env", [])}
            secrets = {
                s["parameter"]: SecretKey(s["name"], s["key"])
                for s in spec.get("secretTargetRef", [])
            }
            username = (running.container["name"], _variable(running, "SASL_USERNAME"))
            if given.get("username") != username:
                problems.append(f"{where}: user name from {given.get('username')}")
            if secrets.get("password") != SecretKey(principal, "password"):
                problems.append(f"{where}: password from {secrets.get('password')}")
            if secrets.get("ca") != CLUSTER_CA:
                problems.append(f"{where}: CA from {secrets.get('ca')}")
    return problems


def test_keda_reads_each_worker_s_lag_with_the_worker_s_login(objects: list[Manifest]) -> None:
    assert keda_login_problems(objects) == []


def test_keda_logged_in_as_another_worker_is_caught() -> None:
    changed = copy.deepcopy(overlay_objects("prod"))
    scaled = named_object(changed, "ScaledObject", "notification-worker")
    scaled["spec"]["triggers"][0]["authenticationRef"]["name"] = "kafka-order-service"
    del scaled["spec"]["triggers"][1]["metadata"]["tls"]

    problems = keda_login_problems(changed)

    assert any("notification-worker/" in p and "user name from" in p for p in problems)
    assert any("notification-worker/" in p and "tls None" in p for p in problems)
