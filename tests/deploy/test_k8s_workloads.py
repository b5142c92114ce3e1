"""The workloads of every overlay: locked down (non-root, read-only, no privilege, no
capability), sized, probed on paths the apps serve, stopped gracefully, scaled by an
autoscaler of their own, protected from drains, never started before their schema, and
given their secrets by reference only."""

from __future__ import annotations

import copy
import re

from .apps import serves
from .manifests import (
    Manifest,
    SecretKey,
    containers,
    iter_probes,
    labels,
    of_kind,
    pod_spec,
    resolve_port,
    workloads,
)
from .manifests import named as named_object
from .settings_env import is_loopback, secret_variables
from .shop_k8s import Running, keyword_constant, main_processes, shop_containers

WRITABLE_ROOT = {
    # Its launcher writes the broker's configuration into the image's folders at start
    # (overlays/dev/infra/kafka.yaml); non-root, unprivileged, no capability all the same.
    "apache/kafka",
}
SINGLE_REPLICA = {
    # Its login throttle counts failures in the process: a second replica would double a
    # guesser's tries (k8s/base/console/console.yaml).
    "console",
}


def _where(workload: Manifest, container: Manifest) -> str:
    return f"{workload['metadata']['name']}/{container['name']}"


# -- security ---------------------------------------------------------------------------


def security_problems(objects: list[Manifest]) -> list[str]:
    problems = []
    for workload in workloads(objects):
        pod = pod_spec(workload)
        pod_context = pod.get("securityContext", {})
        if pod.get("automountServiceAccountToken") is not False:
            problems.append(f"{workload['metadata']['name']}: a service account token is mounted")
        if pod.get("hostNetwork") or pod.get("hostPID") or pod.get("hostIPC"):
            problems.append(f"{workload['metadata']['name']}: shares the node's namespaces")
        for container in containers(workload):
            context = {**pod_context, **container.get("securityContext", {})}
            where = _where(workload, container)
            if context.get("runAsNonRoot") is not True:
                problems.append(f"{where}: runAsNonRoot is not set")
            if context.get("runAsUser") in (None, 0):
                problems.append(f"{where}: runs as uid {context.get('runAsUser', 'of the image')}")
            if context.get("allowPrivilegeEscalation") is not False:
                problems.append(f"{where}: may gain privileges")
            if context.get("privileged"):
                problems.append(f"{where}: is privileged")
            capabilities = context.get("capabilities", {})
            if "ALL" not in capabilities.get("drop", []) or capabilities.get("add"):
                problems.append(f"{where}: keeps capabilities")
            if context.get("seccompProfile", {}).get("type") not in {"RuntimeDefault", "Localhost"}:
                problems.append(f"{where}: has no seccomp profile")
            image = container["image"].rsplit(":", 1)[0]
            if context.get("readOnlyRootFilesystem") is not True and image not in WRITABLE_ROOT:
                problems.append(f"{where}: its root filesystem is writable")
    return problems


def test_every_container_is_locked_down(objects: list[Manifest]) -> None:
    assert security_problems(objects) == []


def test_a_container_that_runs_as_root_or_may_write_its_image_is_caught(
    objects: list[Manifest],
) -> None:
    changed = copy.deepcopy(objects)
    worker = named_object(changed, "Deployment", "payment-worker")
    pod_spec(worker)["securityContext"]["runAsUser"] = 0
    pod_spec(worker)["containers"][0]["securityContext"]["readOnlyRootFilesystem"] = False
    del pod_spec(worker)["containers"][0]["securityContext"]["capabilities"]

    assert sorted(set(security_problems(changed)) - set(security_problems(objects))) == [
        "payment-worker/payment-migrate: runs as uid 0",
        "payment-worker/payment-worker: its root filesystem is writable",
        "payment-worker/payment-worker: keeps capabilities",
        "payment-worker/payment-worker: runs as uid 0",
    ]


# -- resources --------------------------------------------------------------------------

_UNITS = {"m": 0.001, "": 1, "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "k": 1e3, "M": 1e6, "G": 1e9}


def quantity(text: str | int | float) -> float:
    match = re.fullmatch(r"(\d+(?:\.\d+)?)([A-Za-z]*)", str(text))
    if match is None or match[2] not in _UNITS:
        raise ValueError(f"not a quantity: {text}")
    return float(match[1]) * _UNITS[match[2]]


def resource_problems(objects: list[Manifest]) -> list[str]:
    problems = []
    for workload in workloads(objects):
        for container in containers(workload):
            resources = container.get("resources", {})
            for resource in ("cpu", "memory"):
                request = resources.get("requests", {}).get(resource)
                limit = resources.get("limits", {}).get(resource)
                where = f"{_where(workload, container)} {resource}"
                if request is None or limit is None:
                    problems.append(f"{where}: needs a request and a limit")
                elif quantity(request) > quantity(limit):
                    problems.append(f"{where}: requests more than its limit")
    return problems


def test_every_container_requests_and_is_limited(objects: list[Manifest]) -> None:
    assert resource_problems(objects) == []


def test_a_container_without_limits_is_caught(objects: list[Manifest]) -> None:
    changed = copy.deepcopy(objects)
    api = named_object(changed, "Deployment", "order-api")
    del pod_spec(api)["containers"][0]["resources"]["limits"]["memory"]
    pod_spec(api)["initContainers"][0]["resources"]["requests"]["cpu"] = "2"

    assert resource_problems(changed) == [
        "order-api/order-migrate cpu: requests more than its limit",
        "order-api/order-api memory: needs a request and a limit",
    ]


# -- probes -----------------------------------------------------------------------------

WHERE_IT_LISTENS = {"api": "where the API listens", "worker": "the worker's health port"}


def probe_problems(objects: list[Manifest]) -> list[str]:
    problems = []
    for running in main_processes(objects):
        kinds = dict(iter_probes(running.container))
        missing = {"startupProbe", "readinessProbe", "livenessProbe"} - set(kinds)
        if missing:
            problems.append(f"{running.name}: no {', '.join(sorted(missing))}")
        host, _ = running.listens
        if kinds and is_loopback(host):
            # The kubelet connects to the pod's address, never to its loopback.
            problems.append(f"{running.name}: listens on {host}, where no probe reaches it")
        for kind, probe in kinds.items():
            problems.extend(f"{running.name} {kind}: {p}" for p in _http_probe(running, probe))
    return problems


def _http_probe(running: Running, probe: Manifest) -> list[str]:
    """An HTTP GET by the kubelet, to the pod's address, on a port the container declares
    and the process listens on, for a path it serves."""
    role = running.process.role
    if "httpGet" not in probe:
        return [f"{'an API' if role == 'api' else 'a worker'} is probed over HTTP"]
    get = probe["httpGet"]
    problems = []
    if "host" in get:
        problems.append(f"asks {get['host']}, not the pod")
    if get.get("scheme", "HTTP") != "HTTP":
        problems.append(f"asks over {get['scheme']}, the process speaks HTTP")
    resolved = resolve_port(running.container, get["port"])
    if resolved is None:
        problems.append(f"port {get['port']} is not one the container declares")
    elif resolved != running.port:
        problems.append(f"port {get['port']} is not {running.port}, {WHERE_IT_LISTENS[role]}")
    elif not serves(running.process, get["path"]):
        what = running.process.module if role == "api" else "the workers' health server"
        problems.append(f"{get['path']} is not a path of {what}")
    return problems


def test_every_process_is_probed_on_paths_and_ports_it_serves(objects: list[Manifest]) -> None:
    assert probe_problems(objects) == []


def test_a_probe_on_a_path_or_port_the_app_lacks_is_caught(objects: list[Manifest]) -> None:
    changed = copy.deepcopy(objects)
    api = pod_spec(named_object(changed, "Deployment", "payment-api"))["containers"][0]
    api["livenessProbe"]["httpGet"]["path"] = "/health"
    api["ports"][0]["containerPort"] = 8080
    worker = pod_spec(named_object(changed, "Deployment", "order-worker"))["containers"][0]
    worker["readinessProbe"]["httpGet"]["path"] = "/ready"
    del worker["startupProbe"]

    problems = probe_problems(changed)

    assert (
        "payment-api/payment-api livenessProbe: port http is not 8002, where the API listens"
        in (problems)
    )
    assert "order-worker/order-worker: no startupProbe" in problems
    assert (
        "order-worker/order-worker readinessProbe: /ready is not a path of the workers' health "
        "server"
    ) in problems


def test_a_worker_probed_where_it_does_not_listen_is_caught(objects: list[Manifest]) -> None:
    changed = copy.deepcopy(objects)
    payment = pod_spec(named_object(changed, "Deployment", "payment-worker"))["containers"][0]
    payment["ports"][0]["containerPort"] = 9101
    notification = pod_spec(named_object(changed, "Deployment", "notification-worker"))
    notification = notification["containers"][0]
    # By number rather than name: the same declared port, and no problem.
    notification["startupProbe"]["httpGet"]["port"] = 9103
    notification["readinessProbe"] = {
        "exec": {"command": ["python", "-c", "import urllib.request"]}
    }
    notification["livenessProbe"]["httpGet"]["port"] = "metrics"
    order = pod_spec(named_object(changed, "Deployment", "order-worker"))["containers"][0]
    order["env"].append({"name": "SHOP_ORDER_WORKER_HEALTH_HOST", "value": "127.0.0.1"})
    order["startupProbe"]["httpGet"]["host"] = "127.0.0.1"

    assert sorted(set(probe_problems(changed)) - set(probe_problems(objects))) == [
        "notification-worker/notification-worker livenessProbe: port metrics is not one the "
        "container declares",
        "notification-worker/notification-worker readinessProbe: a worker is probed over HTTP",
        "order-worker/order-worker startupProbe: asks 127.0.0.1, not the pod",
        "order-worker/order-worker: listens on 127.0.0.1, where no probe reaches it",
        "payment-worker/payment-worker livenessProbe: port health is not 9102, the worker's "
        "health port",
        "payment-worker/payment-worker readinessProbe: port health is not 9102, the worker's "
        "health port",
        "payment-worker/payment-worker startupProbe: port health is not 9102, the worker's "
        "health port",
    ]


# -- stopping ---------------------------------------------------------------------------


def _pre_stop_seconds(container: Manifest) -> float:
    pre_stop = container.get("lifecycle", {}).get("preStop", {})
    if "sleep" in pre_stop:
        return float(pre_stop["sleep"]["seconds"])
    command = pre_stop.get("exec", {}).get("command", [])
    if command[:1] == ["sleep"]:
        return float(command[1])
    return 0.0


def stop_problems(objects: list[Manifest]) -> list[str]:
    """SIGTERM, then SIGKILL after terminationGracePeriodSeconds (30 s by default)."""
    problems = []
    for running in main_processes(objects):
        grace = float(pod_spec(running.workload).get("terminationGracePeriodSeconds", 30))
        if running.process.role == "worker":
            drain = running.messaging.drain_timeout
            if grace <= drain:
                problems.append(f"{running.name}: {grace} s to stop, its drain takes {drain} s")
        elif running.process.role == "api":
            pause = _pre_stop_seconds(running.container)
            if pause < 1:
                problems.append(f"{running.name}: no preStop pause before SIGTERM")
            shutdown = keyword_constant(running.process.module, "timeout_graceful_shutdown")
            if grace <= pause + shutdown:
                problems.append(
                    f"{running.name}: {grace} s to stop, after {pause} s of pause it needs "
                    f"{shutdown} s"
                )
    return problems


def test_every_process_is_given_the_time_to_stop_gracefully(objects: list[Manifest]) -> None:
    assert stop_problems(objects) == []


def test_a_worker_killed_before_its_drain_ends_is_caught(objects: list[Manifest]) -> None:
    changed = copy.deepcopy(objects)
    pod_spec(named_object(changed, "Deployment", "notification-worker"))[
        "terminationGracePeriodSeconds"
    ] = 30
    api = pod_spec(named_object(changed, "Deployment", "order-api"))
    del api["containers"][0]["lifecycle"]

    assert stop_problems(changed) == [
        "notification-worker/notification-worker: 30.0 s to stop, its drain takes 30.0 s",
        "order-api/order-api: no preStop pause before SIGTERM",
    ]


# -- scaling and disruptions ------------------------------------------------------------


def scaling_problems(objects: list[Manifest]) -> list[str]:
    deployments = {d["metadata"]["name"]: d for d in of_kind(objects, "Deployment")}
    on_cpu = {
        h["spec"]["scaleTargetRef"]["name"]: h for h in of_kind(objects, "HorizontalPodAutoscaler")
    }
    on_lag = {s["spec"]["scaleTargetRef"]["name"] for s in of_kind(objects, "ScaledObject")}
    problems = [
        f"{target} is scaled but not deployed"
        for target in (set(on_cpu) | on_lag) - set(deployments)
    ]
    for running in main_processes(objects):
        name = running.workload["metadata"]["name"]
        wanted = {"api": on_cpu, "worker": on_lag}.get(running.process.role)
        if name in SINGLE_REPLICA or wanted is None:
            continue
        if name not in wanted:
            problems.append(f"{name}: no autoscaler ({running.process.role}s scale on their own)")
        if "replicas" in running.workload["spec"]:
            problems.append(f"{name}: replicas fixed while an autoscaler owns the count")
        if name in on_cpu:
            metrics = on_cpu[name]["spec"].get("metrics", [])
            if not any(m.get("resource", {}).get("name") == "cpu" for m in metrics):
                problems.append(f"{name}: its autoscaler does not watch the CPU")
    return problems


def test_each_api_scales_on_cpu_and_each_worker_on_its_backlog(objects: list[Manifest]) -> None:
    assert scaling_problems(objects) == []


def test_a_process_without_its_autoscaler_is_caught(objects: list[Manifest]) -> None:
    changed = [
        item
        for item in copy.deepcopy(objects)
        if not (
            item["kind"] == "HorizontalPodAutoscaler" and item["metadata"]["name"] == "order-api"
        )
    ]
    named_object(changed, "Deployment", "payment-worker")["spec"]["replicas"] = 3

    assert scaling_problems(changed) == [
        "order-api: no autoscaler (apis scale on their own)",
        "payment-worker: replicas fixed while an autoscaler owns the count",
    ]


def disruption_problems(objects: list[Manifest]) -> list[str]:
    budgets = [
        b["spec"]["selector"]["matchLabels"] for b in of_kind(objects, "PodDisruptionBudget")
    ]
    problems = []
    for running in main_processes(objects):
        name = running.workload["metadata"]["name"]
        if name in SINGLE_REPLICA:
            continue
        pod_labels = labels(running.workload)
        if not any(all(pod_labels.get(k) == v for k, v in b.items()) for b in budgets):
            problems.append(f"{name}: no PodDisruptionBudget")
    return problems


def test_each_scaled_process_keeps_replicas_through_a_drain(objects: list[Manifest]) -> None:
    assert disruption_problems(objects) == []


def test_a_process_without_a_disruption_budget_is_caught(objects: list[Manifest]) -> None:
    changed = [
        item
        for item in objects
        if not (
            item["kind"] == "PodDisruptionBudget" and item["metadata"]["name"] == "order-worker"
        )
    ]

    assert disruption_problems(changed) == ["order-worker: no PodDisruptionBudget"]


# -- migrations -------------------------------------------------------------------------


def migration_problems(objects: list[Manifest]) -> list[str]:
    """Each process of a service with migrations starts after them, in its own pod: the
    first init step migrates, with the process's own settings (what it needs of them:
    every variable it gets, the process gets alike)."""
    every = shop_containers(objects)
    migrations = {r.process.package: r.process.command for r in every if r.process.role == "job"}
    migrations = {p: c for p, c in migrations.items() if c[-1:] == ("migrate",)}
    problems = []
    for running in main_processes(objects):
        migration = migrations.get(running.process.package)
        if migration is None:
            continue
        init = pod_spec(running.workload).get("initContainers", [])
        if not init or tuple(init[0]["command"]) != migration:
            problems.append(f"{running.name}: may start before its migration")
            continue
        step = next(r for r in every if r.container is init[0])
        if any(
            not _same_setting(name, value, running.env.get(name))
            for name, value in step.env.items()
        ):
            problems.append(f"{running.name}: migrates with other settings than it runs with")
    return problems


def _same_setting(name: str, migrating: object, running: object) -> bool:
    """The migration step's value is the process's, but for the database, which it reaches
    as the owner of the schema (its Secret's migration-database-url) where the process
    reaches it as the app role (the same Secret's database-url)."""
    if (
        name.endswith("_DATABASE_URL")
        and isinstance(migrating, SecretKey)
        and isinstance(running, SecretKey)
    ):
        return (migrating.name, migrating.key, running.key) == (
            running.name,
            "migration-database-url",
            "database-url",
        )
    return migrating == running


def test_no_process_outruns_its_migration(objects: list[Manifest]) -> None:
    assert migration_problems(objects) == []


def test_a_process_that_may_outrun_its_migration_is_caught(objects: list[Manifest]) -> None:
    changed = copy.deepcopy(objects)
    del pod_spec(named_object(changed, "Deployment", "payment-worker"))["initContainers"]
    order = pod_spec(named_object(changed, "Deployment", "order-worker"))
    for variable in order["initContainers"][0]["env"]:
        if variable["name"] == "SHOP_ORDER_DATABASE_URL":
            variable["valueFrom"]["secretKeyRef"]["key"] = "database-url"

    assert migration_problems(changed) == [
        "order-worker/order-worker: migrates with other settings than it runs with",
        "payment-worker/payment-worker: may start before its migration",
    ]


# -- secrets ----------------------------------------------------------------------------


def secret_problems(objects: list[Manifest]) -> list[str]:
    problems = [
        f"Secret {item['metadata']['name']} holds values in the manifests"
        for item in of_kind(objects, "Secret")
    ]
    for running in shop_containers(objects):
        secret = {v for cls in running.process.settings for v in secret_variables(cls)}
        for variable, value in running.env.items():
            if variable.upper() in secret and not isinstance(value, SecretKey):
                problems.append(f"{running.name}: {variable} is written out, not a Secret's key")
    return problems


def test_secrets_are_only_ever_referenced(objects: list[Manifest]) -> None:
    assert secret_problems(objects) == []


def test_a_secret_written_into_a_manifest_is_caught(objects: list[Manifest]) -> None:
    changed = copy.deepcopy(objects)
    api = pod_spec(named_object(changed, "Deployment", "order-api"))["containers"][0]
    [jwt] = [i for i, e in enumerate(api["env"]) if e["name"] == "SHOP_ORDER_JWT_SECRET"]
    api["env"][jwt] = {"name": "SHOP_ORDER_JWT_SECRET", "value": "hunter2hunter2hunter2"}
    changed.append({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "leaked"}})

    assert secret_problems(changed) == [
        "Secret leaked holds values in the manifests",
        "order-api/order-api: SHOP_ORDER_JWT_SECRET is written out, not a Secret's key",
    ]
