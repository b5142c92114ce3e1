"""Where each pod may connect: nowhere, unless a policy lets it out, and then only to the
cluster's DNS and what its processes use, as their settings say: its database, the bus
(the workers and the console), the SMTP provider, the payment gateways' APIs, the trace
collector, and for the console the APIs and the workers' health ports. Every connection
a process makes is let out, and every opening is used by one of the pod's processes."""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from .manifests import (
    Manifest,
    SecretKey,
    containers,
    labels,
    of_kind,
    resolve_port,
    workloads,
)
from .shop_k8s import Running, shop_containers
from .test_k8s_network import selects

DNS_PORT = 53
CONSOLE_READS = (
    "order_api_url",
    "payment_api_url",
    "order_worker_url",
    "payment_worker_url",
    "notification_worker_url",
)
"""The console's settings of the services it reads."""
CLUSTER_DNS = {
    "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "kube-system"}},
    "podSelector": {"matchLabels": {"k8s-app": "kube-dns"}},
}


@dataclass(frozen=True)
class Destination:
    """A connection a process makes: what for, to which host (None: a Secret holds it, so
    the manifests cannot say) and port."""

    purpose: str
    host: str | None
    port: int


def _url(purpose: str, url: str, default_port: int) -> Destination:
    parts = urlsplit(url)
    return Destination(purpose, parts.hostname, parts.port or default_port)


def destinations(running: Running) -> set[Destination]:
    """Every connection the process makes, from the settings it starts with."""
    found: set[Destination] = set()
    settings = running.settings()
    for name, value in running.env.items():
        if name.endswith("DATABASE_URL"):
            port = urlsplit(running.plain_env[name]).port or 5432
            host = None if isinstance(value, SecretKey) else urlsplit(value).hostname
            found.add(Destination("database", host, port))
    # As the other network checks have it: the workers and the console use the bus.
    if running.process.role == "worker" or running.process.package == "shop.console":
        messaging = running.messaging
        if messaging.transport == "kafka":
            for server in messaging.kafka.bootstrap_servers.split(","):
                host, _, port = server.strip().rpartition(":")
                found.add(Destination("bus", host, int(port)))
        elif messaging.transport == "sqs":
            found.add(Destination("bus", None, 443))
    for instance in settings.values():
        found |= _provider_destinations(running, instance)
    return found


def _provider_destinations(running: Running, instance: Any) -> set[Destination]:
    found = set()
    smtp = getattr(instance, "smtp", None)
    if smtp is not None and running.process.role == "worker":
        found.add(Destination("smtp", smtp.host, smtp.port))
    gateways = getattr(instance, "gateways", None)
    if gateways is not None and running.process.role == "worker":
        urls = {"shop": instance.shop_gateway_api_url, "midtrans": instance.midtrans_api_url}
        found |= {_url("gateway", urls[str(g)], 443) for g in gateways}
    tracing = getattr(instance, "tracing", None)
    if tracing is not None and getattr(tracing, "exporter", None) == "otlp":
        found.add(_url("tracing", tracing.otlp_endpoint, 4318))
    if running.process.package == "shop.console" and hasattr(instance, "order_worker_url"):
        for field in CONSOLE_READS:
            found.add(_url("console", getattr(instance, field), 80))
        if instance.tracing_url:
            found.add(_url("tracing-query", instance.tracing_url, 80))
    return found


# -- what the policies let out -------------------------------------------------------------


@dataclass(frozen=True)
class Target:
    """Where a destination leads inside the namespace: the Service's pods and the port
    they take the connection on (None: outside the namespace)."""

    pods: tuple[Manifest, ...]
    port: int


def _namespace(objects: list[Manifest]) -> str:
    found = {item["metadata"].get("namespace") for item in objects} - {None}
    return str(next(iter(found))) if len(found) == 1 else ""


def target(objects: list[Manifest], destination: Destination) -> Target | None:
    """The namespace's pods behind the destination's host (a Service's name, short or
    qualified), with the port they listen on; None for a host outside the namespace."""
    if destination.host is None:
        return None
    namespace = _namespace(objects)
    name, _, rest = destination.host.partition(".")
    if rest not in ("", f"{namespace}.svc", f"{namespace}.svc.cluster.local"):
        return None
    for service in of_kind(objects, "Service"):
        if service["metadata"]["name"] != name:
            continue
        selector = {"matchLabels": service["spec"].get("selector", {})}
        pods = tuple(w for w in workloads(objects) if selects(selector, labels(w)))
        for port in service["spec"]["ports"]:
            if int(port["port"]) == destination.port:
                backend = port.get("targetPort", port["port"])
                numbers = {
                    resolve_port(c, backend) for pod in pods for c in containers(pod, init=False)
                }
                numbers.discard(None)
                if numbers:
                    return Target(pods, int(numbers.pop()))
    return None


def _egress_rules(objects: list[Manifest], workload: Manifest) -> list[dict[str, Any]]:
    return [
        rule
        for policy in of_kind(objects, "NetworkPolicy")
        if "Egress" in policy["spec"].get("policyTypes", [])
        and selects(policy["spec"]["podSelector"], labels(workload))
        for rule in policy["spec"].get("egress", [])
    ]


def _port_allows(entry: dict[str, Any], port: int, inside: Target | None) -> bool:
    if "port" not in entry:
        return True
    wanted = entry["port"]
    if isinstance(wanted, int) or str(wanted).isdigit():
        return int(wanted) == port
    # A named port is the destination pod's: known inside the namespace only.
    return inside is not None and any(
        resolve_port(c, wanted) == port for pod in inside.pods for c in containers(pod)
    )


def _peer_allows(peer: dict[str, Any], destination: Destination, inside: Target | None) -> bool:
    if not peer or destination.host is None:
        # Anywhere; or a host only a Secret names, which any peer may be.
        return True
    if "ipBlock" in peer:
        return inside is None
    if "namespaceSelector" in peer:
        wanted = peer["namespaceSelector"].get("matchLabels", {}).get("kubernetes.io/metadata.name")
        return inside is None and destination.host.split(".")[1:2] == [wanted]
    return inside is not None and all(selects(peer["podSelector"], labels(p)) for p in inside.pods)


def _secret_host_target(
    objects: list[Manifest], rule: dict[str, Any], destination: Destination
) -> Target | None:
    """For a host only a Secret names: the pods of the namespace the rule's peers select,
    should the host be theirs (a named port can only be read on them)."""
    selectors = [peer["podSelector"] for peer in rule.get("to", []) if set(peer) == {"podSelector"}]
    pods = tuple(w for w in workloads(objects) if any(selects(sel, labels(w)) for sel in selectors))
    return Target(pods, destination.port) if pods else None


def rule_allows(rule: dict[str, Any], destination: Destination, inside: Target | None) -> bool:
    port = inside.port if inside is not None else destination.port
    ports = rule.get("ports") or [{}]
    peers = rule.get("to") or [{}]
    return any(_port_allows(e, port, inside) for e in ports) and any(
        _peer_allows(peer, destination, inside) for peer in peers
    )


def _is_dns(rule: dict[str, Any]) -> bool:
    return rule.get("to") == [CLUSTER_DNS] and {int(p["port"]) for p in rule.get("ports", [])} == {
        DNS_PORT
    }


def egress_problems(objects: list[Manifest]) -> list[str]:
    denied = [
        p
        for p in of_kind(objects, "NetworkPolicy")
        if p["spec"]["podSelector"] == {}
        and p["spec"].get("policyTypes") == ["Egress"]
        and not p["spec"].get("egress")
    ]
    problems = [] if denied else ["nothing refuses outgoing connections by default"]
    processes = shop_containers(objects)
    for workload in workloads(objects):
        name = workload["metadata"]["name"]
        rules = _egress_rules(objects, workload)
        if not any(_is_dns(rule) for rule in rules):
            problems.append(f"{name}: cannot resolve names")
        used = {d for r in processes if r.workload is workload for d in destinations(r)}
        wanted = sorted(used, key=repr)

        def allows(rule: dict[str, Any], destination: Destination) -> bool:
            inside = target(objects, destination)
            if destination.host is None:
                inside = _secret_host_target(objects, rule, destination)
            return rule_allows(rule, destination, inside)

        for destination in wanted:
            if not any(allows(rule, destination) for rule in rules):
                problems.append(f"{name}: cannot reach its {destination.purpose} {destination}")
        for rule in rules:
            if not rule.get("ports"):
                problems.append(f"{name}: may reach {rule} on every port")
            elif not _is_dns(rule) and not any(allows(rule, d) for d in wanted):
                problems.append(f"{name}: may reach {rule}, which none of its processes uses")
    return problems


def test_every_pod_reaches_dns_and_what_its_processes_use_and_nothing_else(
    objects: list[Manifest],
) -> None:
    assert egress_problems(objects) == []


def test_every_process_connects_somewhere_the_checks_know(objects: list[Manifest]) -> None:
    purposes = {d.purpose for r in shop_containers(objects) for d in destinations(r)}

    assert {"database", "bus", "smtp", "gateway", "console"} <= purposes


def test_a_pod_left_without_a_way_out_or_let_out_anywhere_is_caught(
    objects: list[Manifest],
) -> None:
    changed = copy.deepcopy(objects)
    for policy in of_kind(changed, "NetworkPolicy"):
        if policy["spec"]["podSelector"] == {"matchLabels": {"skincare-shop/bus-client": "true"}}:
            policy["spec"]["podSelector"] = {"matchLabels": {"app.kubernetes.io/name": "console"}}
    changed.append(
        {
            "apiVersion": "networking.k8s.io/v1",
            "kind": "NetworkPolicy",
            "metadata": {"name": "order-api-anywhere"},
            "spec": {
                "podSelector": {"matchLabels": {"app.kubernetes.io/name": "order-api"}},
                "policyTypes": ["Egress"],
                "egress": [{}],
            },
        }
    )

    problems = egress_problems(changed)

    assert any(p.startswith("order-worker: cannot reach its bus") for p in problems)
    assert "order-api: may reach {} on every port" in problems


def test_without_a_default_deny_the_egress_is_open_and_caught(objects: list[Manifest]) -> None:
    changed = [
        item
        for item in copy.deepcopy(objects)
        if not (
            item["kind"] == "NetworkPolicy" and item["metadata"]["name"] == "default-deny-egress"
        )
    ]

    assert "nothing refuses outgoing connections by default" in egress_problems(changed)
