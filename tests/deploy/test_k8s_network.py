"""Who reaches what: the internet only the frontend's and the gateway's paths (through the
Ingress, never an operations path or the console), the APIs only the ingress controller,
the workers' health ports only the console, the metrics ports only Prometheus (which
scrapes where the pods' annotations say), Postgres and the broker only the shop's
processes. The console reads each worker's counts through a Service that leads to it."""

from __future__ import annotations

import copy
from typing import Any
from urllib.parse import urlsplit

import pytest

from shop.ops.settings import OpsSettings

from .apps import api_serves, serves
from .manifests import Manifest, labels, of_kind, pod_annotations, pod_spec, resolve_port, workloads
from .manifests import named as named_object
from .shop_k8s import Running, bus_of, main_processes

OPERATIONS = ("/metrics", "/healthz", "/readyz", "/docs", "/redoc", "/openapi.json")
CONSOLE = "console"
NOT_PUBLIC = {CONSOLE}
INGRESS_CONTROLLER = {"kubernetes.io/metadata.name": "ingress-nginx"}
MONITORING = {"kubernetes.io/metadata.name": "monitoring"}
"""Prometheus' namespace, by the label the API server gives every namespace (its name)."""


def selects(selector: dict[str, Any], pod_labels: dict[str, str]) -> bool:
    for key, value in selector.get("matchLabels", {}).items():
        if pod_labels.get(key) != value:
            return False
    for expression in selector.get("matchExpressions", []):
        key, operator = expression["key"], expression["operator"]
        values = expression.get("values", [])
        present = key in pod_labels
        if (
            (operator == "In" and pod_labels.get(key) not in values)
            or (operator == "NotIn" and pod_labels.get(key) in values)
            or (operator == "Exists" and not present)
            or (operator == "DoesNotExist" and present)
        ):
            return False
    return True


def _policies_for(objects: list[Manifest], workload: Manifest) -> list[Manifest]:
    return [
        policy
        for policy in of_kind(objects, "NetworkPolicy")
        if selects(policy["spec"]["podSelector"], labels(workload))
    ]


def _sources(policies: list[Manifest]) -> list[dict[str, Any]]:
    return [
        peer for p in policies for rule in p["spec"].get("ingress", []) for peer in rule["from"]
    ]


Opening = tuple[dict[str, Any], set[int] | None]
"""Who may connect (a policy's peer), and to which of the pod's ports (None: every one)."""


def openings(objects: list[Manifest], running: Running) -> list[Opening]:
    """Every connection the policies let in to the process's pod, on the ports of its
    container (a named port it does not declare opens nothing on it)."""
    found = []
    for policy in _policies_for(objects, running.workload):
        for rule in policy["spec"].get("ingress", []):
            ports = _ports(rule, running.container)
            if ports == set():
                continue
            # A rule without sources lets in anyone.
            found += [(peer, ports) for peer in rule.get("from") or [{}]]
    return found


def _ports(rule: dict[str, Any], container: Manifest) -> set[int] | None:
    if not rule.get("ports"):
        return None
    found: set[int] = set()
    for entry in rule["ports"]:
        if "port" not in entry:
            return None
        if "endPort" in entry:
            found |= set(range(int(entry["port"]), int(entry["endPort"]) + 1))
            continue
        port = resolve_port(container, entry["port"])
        if port is not None:
            found.add(port)
    return found


def _from_namespace(peer: dict[str, Any], namespace: dict[str, str]) -> bool:
    """The peer is (some pods of) the namespace of these labels, and nothing else."""
    return "ipBlock" not in peer and peer.get("namespaceSelector", {}).get("matchLabels") == (
        namespace
    )


def _from_console(peer: dict[str, Any], objects: list[Manifest]) -> bool:
    """The peer is the console's pods, of the policy's own namespace, and no other pod."""
    if set(peer) != {"podSelector"}:
        return False
    chosen = {
        w["metadata"]["name"] for w in workloads(objects) if selects(peer["podSelector"], labels(w))
    }
    return chosen == {CONSOLE}


def _who(peer: dict[str, Any], objects: list[Manifest]) -> str | None:
    if _from_namespace(peer, INGRESS_CONTROLLER):
        return "ingress"
    if _from_namespace(peer, MONITORING):
        return "monitoring"
    if _from_console(peer, objects):
        return "console"
    return None


def allowed_sources(running: Running) -> set[str]:
    """Who may connect to the process's port: the ingress controller to a public API,
    the console to a worker's health port (its counts), Prometheus to both (their
    metrics). Nothing reaches the console."""
    name = running.workload["metadata"]["name"]
    if running.process.role == "api" and name not in NOT_PUBLIC:
        return {"ingress", "monitoring"}
    if running.process.role == "worker":
        return {"console", "monitoring"}
    return set()


def reached_by(objects: list[Manifest], running: Running) -> dict[str, set[int]]:
    """The process's ports each allowed source may connect to."""
    reached: dict[str, set[int]] = {}
    for peer, ports in openings(objects, running):
        who = _who(peer, objects)
        if who is not None and ports is not None:
            reached.setdefault(who, set()).update(ports)
    return reached


def policy_problems(objects: list[Manifest]) -> list[str]:
    denied = [
        p
        for p in of_kind(objects, "NetworkPolicy")
        if p["spec"]["podSelector"] == {}
        and "Ingress" in p["spec"].get("policyTypes", [])
        and not p["spec"].get("ingress")
    ]
    problems = [] if denied else ["nothing refuses connections by default"]
    for running in main_processes(objects):
        name = running.workload["metadata"]["name"]
        allowed = allowed_sources(running)
        for peer, ports in openings(objects, running):
            # Only ever the one port the process serves: nothing else of the pod is asked.
            if _who(peer, objects) not in allowed or ports != {running.port}:
                on = "every port" if ports is None else f"port {', '.join(map(str, sorted(ports)))}"
                problems.append(f"{name}: lets in {peer} on {on}")
        reached = reached_by(objects, running)
        if "ingress" in allowed and running.port not in reached.get("ingress", set()):
            problems.append(f"{name}: the ingress controller cannot reach it")
        if "console" in allowed and running.port not in reached.get("console", set()):
            problems.append(f"{name}: the console cannot read its counts")
    return problems


CLIENT_LABELS = {
    "postgres": "skincare-shop/database-client",
    "kafka": "skincare-shop/bus-client",
}
KEDA = {"kubernetes.io/metadata.name": "keda"}


def _allowed(peer: dict[str, Any], server: str) -> bool:
    if peer == {"podSelector": {"matchLabels": {CLIENT_LABELS[server]: "true"}}}:
        return True
    # KEDA's operator reads the consumer groups' lag from the broker.
    return server == "kafka" and peer == {"namespaceSelector": {"matchLabels": KEDA}}


def infrastructure_problems(objects: list[Manifest]) -> list[str]:
    """Where Postgres or the broker run in the namespace, only pods that say they are
    their clients (and KEDA, for the lag) get in."""
    problems = []
    for workload in workloads(objects):
        server = labels(workload).get("app.kubernetes.io/name", "")
        if server not in CLIENT_LABELS:
            continue
        sources = _sources(_policies_for(objects, workload))
        if not sources:
            problems.append(f"{server}: no policy lets its clients in")
        problems += [f"{server}: lets in {peer}" for peer in sources if not _allowed(peer, server)]
    return problems


def client_label_problems(objects: list[Manifest]) -> list[str]:
    """Each process carries the labels of what it connects to, or the policies above
    would cut it off."""
    problems = []
    for running in main_processes(objects):
        name = running.workload["metadata"]["name"]
        needs = set()
        if any(variable.endswith("DATABASE_URL") for variable in running.env):
            needs.add("skincare-shop/database-client")
        if running.process.role == "worker" or running.process.package == "shop.console":
            needs.add("skincare-shop/bus-client")
        if any("_SMTP__" in variable for variable in running.env):
            needs.add("skincare-shop/smtp-client")
        for label in sorted(needs):
            if labels(running.workload).get(label) != "true":
                problems.append(f"{name}: lacks {label}")
    return problems


def test_connections_are_refused_unless_a_policy_allows_them(objects: list[Manifest]) -> None:
    assert policy_problems(objects) == []


def test_an_api_cut_off_from_the_ingress_or_the_console_opened_is_caught(
    objects: list[Manifest],
) -> None:
    changed = [
        p
        for p in copy.deepcopy(objects)
        if not (
            p["kind"] == "NetworkPolicy" and p["metadata"]["name"] == "apis-from-ingress-controller"
        )
    ]
    changed.append(
        {
            "apiVersion": "networking.k8s.io/v1",
            "kind": "NetworkPolicy",
            "metadata": {"name": "open-console"},
            "spec": {
                "podSelector": {"matchLabels": {"app.kubernetes.io/name": "console"}},
                "ingress": [{"from": [{"podSelector": {}}]}],
            },
        }
    )

    assert policy_problems(changed) == [
        "console: lets in {'podSelector': {}} on every port",
        "order-api: the ingress controller cannot reach it",
        "payment-api: the ingress controller cannot reach it",
    ]


def test_a_worker_cut_off_from_the_console_or_opened_wider_is_caught(
    objects: list[Manifest],
) -> None:
    changed = copy.deepcopy(objects)
    console = named_object(changed, "NetworkPolicy", "workers-health-from-console")
    console["spec"]["podSelector"] = {"matchLabels": {"app.kubernetes.io/name": "order-worker"}}
    # Every worker, not the console: the workers would reach each other.
    changed.append(
        {
            "apiVersion": "networking.k8s.io/v1",
            "kind": "NetworkPolicy",
            "metadata": {"name": "workers-from-workers"},
            "spec": {
                "podSelector": {"matchLabels": {"app.kubernetes.io/name": "payment-worker"}},
                "ingress": [
                    {
                        "from": [
                            {
                                "podSelector": {
                                    "matchLabels": {"app.kubernetes.io/component": "worker"}
                                }
                            }
                        ],
                        "ports": [{"port": "health"}],
                    }
                ],
            },
        }
    )
    monitoring = named_object(changed, "NetworkPolicy", "worker-metrics-from-monitoring")
    del monitoring["spec"]["ingress"][0]["ports"]

    assert sorted(policy_problems(changed)) == [
        "notification-worker: lets in {'namespaceSelector': {'matchLabels': "
        "{'kubernetes.io/metadata.name': 'monitoring'}}} on every port",
        "notification-worker: the console cannot read its counts",
        "order-worker: lets in {'namespaceSelector': {'matchLabels': "
        "{'kubernetes.io/metadata.name': 'monitoring'}}} on every port",
        "payment-worker: lets in {'namespaceSelector': {'matchLabels': "
        "{'kubernetes.io/metadata.name': 'monitoring'}}} on every port",
        "payment-worker: lets in {'podSelector': {'matchLabels': "
        "{'app.kubernetes.io/component': 'worker'}}} on port 9102",
        "payment-worker: the console cannot read its counts",
    ]


def test_only_the_shop_reaches_its_database_and_broker(objects: list[Manifest]) -> None:
    assert infrastructure_problems(objects) == []
    assert client_label_problems(objects) == []


def test_a_database_open_to_any_pod_is_caught(objects: list[Manifest]) -> None:
    if not any(w["metadata"]["name"] == "postgres" for w in workloads(objects)):
        pytest.skip("Postgres runs outside this overlay's namespace")
    changed = copy.deepcopy(objects)
    named_object(changed, "NetworkPolicy", "postgres-from-services")["spec"]["ingress"][0][
        "from"
    ] = [{"podSelector": {}}]

    assert infrastructure_problems(changed) == ["postgres: lets in {'podSelector': {}}"]


def test_a_process_without_its_client_label_is_caught(objects: list[Manifest]) -> None:
    changed = copy.deepcopy(objects)
    worker = named_object(changed, "Deployment", "order-worker")
    del worker["spec"]["template"]["metadata"]["labels"]["skincare-shop/bus-client"]

    assert client_label_problems(changed) == ["order-worker: lacks skincare-shop/bus-client"]


# -- Prometheus and the console ----------------------------------------------------------

SCRAPE = "prometheus.io/scrape"


def scrape_problems(objects: list[Manifest]) -> list[str]:
    """Prometheus scrapes (by the pods' prometheus.io annotations) every process whose
    metrics the alerts read, on the port and path the process serves them, and may
    connect there; it scrapes nothing else."""
    problems = []
    for running in main_processes(objects):
        name = running.workload["metadata"]["name"]
        notes = pod_annotations(running.workload)
        scraped = notes.get(SCRAPE) == "true"
        wanted = "monitoring" in allowed_sources(running)
        if wanted and not scraped:
            problems.append(f"{name}: Prometheus does not scrape it")
        if not scraped:
            continue
        if not wanted:
            problems.append(f"{name}: scraped, though nothing may reach it")
        port = notes.get("prometheus.io/port", "")
        path = notes.get("prometheus.io/path", "/metrics")
        if port != str(running.port):
            problems.append(f"{name}: scraped on port {port or '(none)'}, it serves {running.port}")
        elif port and int(port) not in reached_by(objects, running).get("monitoring", set()):
            problems.append(f"{name}: Prometheus may not connect to port {port}")
        if not serves(running.process, path):
            problems.append(f"{name}: scraped at {path}, which it does not serve")
    return problems


def test_prometheus_scrapes_each_api_and_worker_where_it_serves_metrics(
    objects: list[Manifest],
) -> None:
    assert scrape_problems(objects) == []


def test_a_scrape_of_the_wrong_port_or_path_is_caught(objects: list[Manifest]) -> None:
    changed = copy.deepcopy(objects)
    worker = named_object(changed, "Deployment", "order-worker")
    pod_annotations(worker)["prometheus.io/port"] = "8001"
    pod_annotations(named_object(changed, "Deployment", "payment-worker"))["prometheus.io/path"] = (
        "/metric"
    )
    del pod_annotations(named_object(changed, "Deployment", "order-api"))[SCRAPE]
    console = named_object(changed, "Deployment", "console")
    console["spec"]["template"]["metadata"]["annotations"] = {
        SCRAPE: "true",
        "prometheus.io/port": "8003",
    }
    changed = [
        item
        for item in changed
        if not (
            item["kind"] == "NetworkPolicy"
            and item["metadata"]["name"] == "worker-metrics-from-monitoring"
        )
    ]

    assert sorted(scrape_problems(changed)) == [
        "console: Prometheus may not connect to port 8003",
        "console: scraped, though nothing may reach it",
        "notification-worker: Prometheus may not connect to port 9103",
        "order-api: Prometheus does not scrape it",
        "order-worker: scraped on port 8001, it serves 9101",
        "payment-worker: Prometheus may not connect to port 9102",
        "payment-worker: scraped at /metric, which it does not serve",
    ]


def _namespace(item: Manifest) -> str:
    return str(item["metadata"].get("namespace", "default"))


def _service_named(objects: list[Manifest], host: str, client: Manifest) -> Manifest | None:
    """The Service a host name resolves to from the client's pod: ``name`` (in the pod's
    own namespace), ``name.namespace``, ``name.namespace.svc`` or
    ``name.namespace.svc.cluster.local``."""
    name, _, rest = host.partition(".")
    for service in of_kind(objects, "Service"):
        namespace = _namespace(service)
        suffixes = {namespace, f"{namespace}.svc", f"{namespace}.svc.cluster.local"}
        if namespace == _namespace(client):
            suffixes.add("")
        if service["metadata"]["name"] == name and rest in suffixes:
            return service
    return None


def console_reach_problems(objects: list[Manifest]) -> list[str]:
    """Each SHOP_OPS_*_WORKER_URL of the console is a Service of the namespace, on a port
    that leads to that service's worker's health port, and to no other workload."""
    processes = main_processes(objects)
    console = next(r for r in processes if OpsSettings in r.process.settings)
    ops = console.settings()[OpsSettings]
    problems = []
    for worker in (r for r in processes if r.process.role == "worker"):
        service_name = bus_of(worker.process).name
        url = urlsplit(ops.worker_url(service_name))
        host, port = url.hostname or "", url.port or 80
        where = f"{service_name}'s worker at {url.geturl()}"
        service = _service_named(objects, host, console.workload)
        if service is None:
            problems.append(f"{where}: {host} is no Service of the namespace")
            continue
        chosen = {
            w["metadata"]["name"]
            for w in workloads(objects)
            if selects({"matchLabels": service["spec"]["selector"]}, labels(w))
        }
        if chosen != {worker.workload["metadata"]["name"]}:
            problems.append(f"{where}: {host} leads to {sorted(chosen)}")
            continue
        entry = next((p for p in service["spec"]["ports"] if p["port"] == port), None)
        if entry is None:
            problems.append(f"{where}: {host} has no port {port}")
            continue
        target = resolve_port(worker.container, entry.get("targetPort", port))
        if target != worker.port:
            problems.append(f"{where}: leads to port {target}, not the health port {worker.port}")
    return problems


def test_the_console_reads_each_worker_through_its_service(objects: list[Manifest]) -> None:
    assert console_reach_problems(objects) == []


def test_a_console_sent_to_the_wrong_worker_or_port_is_caught(objects: list[Manifest]) -> None:
    changed = copy.deepcopy(objects)
    console = pod_spec(named_object(changed, "Deployment", "console"))["containers"][0]
    console["env"].append({"name": "SHOP_OPS_ORDER_WORKER_URL", "value": "http://order:9101"})
    named_object(changed, "Service", "payment-worker")["spec"]["selector"] = {
        "app.kubernetes.io/component": "worker"
    }
    named_object(changed, "Service", "notification-worker")["spec"]["ports"][0]["port"] = 80

    assert sorted(console_reach_problems(changed)) == [
        "notification-service's worker at http://notification-worker:9103: "
        "notification-worker has no port 9103",
        "order-service's worker at http://order:9101: order is no Service of the namespace",
        "payment-service's worker at http://payment-worker:9102: payment-worker leads to "
        "['notification-worker', 'order-worker', 'payment-worker']",
    ]


# -- the Ingress ------------------------------------------------------------------------


def _backend(objects: list[Manifest], service_name: str) -> list[Running]:
    service = named_object(objects, "Service", service_name)
    return [
        r
        for r in main_processes(objects)
        if selects({"matchLabels": service["spec"]["selector"]}, labels(r.workload))
    ]


def ingress_problems(objects: list[Manifest]) -> list[str]:
    problems = []
    for ingress in of_kind(objects, "Ingress"):
        for rule in ingress["spec"]["rules"]:
            for entry in rule["http"]["paths"]:
                path, prefix = entry["path"], entry["pathType"] == "Prefix"
                where = f"{rule['host']}{path}"
                exposed = [
                    op
                    for op in OPERATIONS
                    if op == path or (prefix and op.startswith(path.rstrip("/") + "/"))
                ]
                if exposed:
                    problems.append(f"{where}: exposes {', '.join(exposed)}")
                service = entry["backend"]["service"]
                ports = {
                    p["name"]
                    for p in named_object(objects, "Service", service["name"])["spec"]["ports"]
                }
                if service["port"].get("name") not in ports:
                    problems.append(f"{where}: {service['name']} has no port {service['port']}")
                for running in _backend(objects, service["name"]):
                    name = running.workload["metadata"]["name"]
                    if running.process.role != "api" or name in NOT_PUBLIC:
                        problems.append(f"{where}: routes to {name}")
                    elif not api_serves(running.process.module, running.process.settings[0], path):
                        problems.append(f"{where}: {running.process.module} has no such path")
    return problems


PUBLIC_PATHS = frozenset(
    {"/v1/orders", "/v1/products", "/v1/payments/webhook", "/v1/payments/webhooks/midtrans"}
)
"""What the frontend and the payment gateways must reach from the internet."""


def routed_paths(objects: list[Manifest]) -> set[str]:
    return {
        entry["path"]
        for ingress in of_kind(objects, "Ingress")
        for rule in ingress["spec"]["rules"]
        for entry in rule["http"]["paths"]
    }


def test_the_internet_reaches_the_shop_s_public_paths_only(objects: list[Manifest]) -> None:
    ingresses = of_kind(objects, "Ingress")

    assert ingresses
    assert ingress_problems(objects) == []
    assert routed_paths(objects) >= PUBLIC_PATHS


def test_a_webhook_left_out_of_the_ingress_is_caught(objects: list[Manifest]) -> None:
    changed = copy.deepcopy(objects)
    paths = named_object(changed, "Ingress", "payment-api")["spec"]["rules"][0]["http"]["paths"]
    paths[:] = [p for p in paths if p["path"] != "/v1/payments/webhooks/midtrans"]

    assert PUBLIC_PATHS - routed_paths(changed) == {"/v1/payments/webhooks/midtrans"}


def test_an_ingress_to_the_console_or_the_metrics_is_caught(objects: list[Manifest]) -> None:
    changed = copy.deepcopy(objects)
    ingress = named_object(changed, "Ingress", "payment-api")
    paths = ingress["spec"]["rules"][0]["http"]["paths"]
    paths[0] = {**paths[0], "path": "/v1/payments/hook"}
    paths.append(
        {
            "path": "/",
            "pathType": "Prefix",
            "backend": {"service": {"name": "console", "port": {"name": "http"}}},
        }
    )
    host = ingress["spec"]["rules"][0]["host"]

    assert ingress_problems(changed) == [
        f"{host}/v1/payments/hook: shop.payment.api has no such path",
        f"{host}/: exposes {', '.join(OPERATIONS)}",
        f"{host}/: routes to console",
    ]
