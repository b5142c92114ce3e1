"""The compose stack holds together as docker compose would run it: every dependency can
be met, every long-running container is health-checked, each process waits for its own
migration, no container runs as root, each process's settings are ones its settings
classes read, complete, and refused in production while they are the example's, and the
console reaches every worker's health port."""

from __future__ import annotations

import copy
import re
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

import pytest
from pydantic import ValidationError
from pydantic_settings import BaseSettings

from shop.console.settings import ConsoleSettings
from shop.ops.settings import OpsSettings
from shop.order.settings import OrderSettings
from shop.payment.settings import PaymentSettings

from .compose_model import (
    BASE_FILE,
    ENV_EXAMPLE,
    Variant,
    commented_settings,
    environment,
    load,
    read_dotenv,
    required_variables,
    variables_used,
    variants,
)
from .dockerfile import Dockerfile
from .processes import SHOPCTL_SETTINGS, Process, process_of, processes
from .repository import COMPOSE_DIR, DOCKERFILE
from .settings_env import (
    is_loopback,
    loopback_defaults,
    messaging_of,
    secret_variables,
    stand_in,
    unknown_variables,
    unnamed_environments,
)
from .settings_env import load as load_settings
from .shop_k8s import bus_of, keyword_constant

Model = dict[str, Any]

ROOT_ALLOWED = {
    # Its runtime writes below /root and /var/lib/localstack; the SQS variant on a
    # developer's machine only (the Kubernetes overlays use AWS itself).
    "localstack/localstack",
}
ROOT_USERS = {"root", "0", "0:0"}


def model_of(variant: Variant, **overrides: str) -> Model:
    return variant.model({**read_dotenv(ENV_EXAMPLE), **overrides})


def shop_image(variables: dict[str, str] | None = None) -> str:
    return (variables or read_dotenv(ENV_EXAMPLE))["SHOP_IMAGE"]


def command_of(service: Model) -> list[str]:
    return list(service.get("entrypoint", [])) + list(service.get("command", []))


def shop_services(model: Model) -> Iterator[tuple[str, Process | None, Model]]:
    """The services of the shop's image, with the process kind each runs (None: shopctl)."""
    for name, service in model["services"].items():
        if service.get("image") == shop_image():
            yield name, process_of(command_of(service)), service


def settings_classes(process: Process | None) -> tuple[type[BaseSettings], ...]:
    return SHOPCTL_SETTINGS if process is None else process.settings


def start(cls: type[BaseSettings], process: Process | None, env: dict[str, str]) -> BaseSettings:
    """The settings ``process`` (None: shopctl) would start with, given ``env``."""
    return load_settings(cls, env, None if process is None else process.named_in_settings)


def is_one_shot(service: Model) -> bool:
    return service.get("restart") == "no"


# -- the checks, each a list of what is wrong ------------------------------------------------


def dependency_problems(model: Model) -> list[str]:
    services = model["services"]
    problems = []
    for name, service in services.items():
        for target, how in service.get("depends_on", {}).items():
            condition = how.get("condition", "service_started")
            if target not in services:
                problems.append(f"{name} waits for {target}, which is not in the stack")
            elif condition == "service_healthy" and "test" not in services[target].get(
                "healthcheck", {}
            ):
                problems.append(f"{name} waits for {target} to be healthy: it has no check")
            elif condition == "service_completed_successfully" and not is_one_shot(
                services[target]
            ):
                problems.append(f"{name} waits for {target} to finish: it is restarted instead")
            elif services[target].get("profiles"):
                problems.append(f"{name} waits for {target}, which starts only in a profile")
    return problems


def health_problems(model: Model) -> list[str]:
    return [
        f"{name} runs on without a health check"
        for name, service in model["services"].items()
        if not is_one_shot(service) and "test" not in service.get("healthcheck", {})
    ]


def _finished_before(model: Model, name: str) -> set[str]:
    """The one-shot services that complete before ``name`` starts (transitively)."""
    done: set[str] = set()
    waiting = [name]
    while waiting:
        for target, how in model["services"][waiting.pop()].get("depends_on", {}).items():
            if how.get("condition") == "service_completed_successfully" and target not in done:
                done.add(target)
                waiting.append(target)
    return done


def migration_problems(model: Model) -> list[str]:
    migrations = {
        process.package: process.command
        for process in processes().values()
        if process.command[-1:] == ("migrate",)
    }
    problems = []
    for name, process, _ in shop_services(model):
        if process is None or process.role == "job":
            continue
        # A service's processes need its schema; the console reads every service's.
        needed = (
            {process.package}
            if process.package in migrations
            else set(migrations)
            if OpsSettings in process.settings
            else set()
        )
        before = _finished_before(model, name)
        ran = {tuple(command_of(model["services"][target])) for target in before}
        for package in sorted(needed):
            if migrations[package] not in ran:
                problems.append(f"{name} may start before {package}'s migration")
    return problems


def root_problems(model: Model) -> list[str]:
    image_user = Dockerfile.read(DOCKERFILE).user("runtime")
    problems = []
    for name, service in model["services"].items():
        user = service.get("user")
        image = str(service.get("image", ""))
        if user is None and image == shop_image():
            user = image_user
        if image.partition(":")[0] in ROOT_ALLOWED:
            continue
        if user is None or str(user) in ROOT_USERS or str(user).startswith("0:"):
            problems.append(f"{name} runs as {user or 'the image default (root)'}")
    return problems


def _seconds(duration: str) -> float:
    units = {"h": 3600, "m": 60, "s": 1, "ms": 0.001}
    parts = re.findall(r"(\d+(?:\.\d+)?)(ms|h|m|s)", duration)
    if not parts:
        raise ValueError(f"not a duration: {duration}")
    return sum(float(number) * units[unit] for number, unit in parts)


def stop_problems(model: Model) -> list[str]:
    """Compose kills what has not stopped after stop_grace_period (10 s by default)."""
    problems = []
    for name, process, service in shop_services(model):
        if process is None or process.role == "job":
            continue
        grace = _seconds(str(service.get("stop_grace_period", "10s")))
        env = environment(service)
        if process.role == "worker":
            needed = messaging_of(start(process.settings[0], process, env)).drain_timeout
        else:
            needed = keyword_constant(process.module, "timeout_graceful_shutdown")
        if grace <= needed:
            problems.append(f"{name}: stop_grace_period {grace} s, it needs more than {needed} s")
    return problems


# -- the tests -------------------------------------------------------------------------------

VARIANTS = variants()


def test_the_base_file_alone_does_not_start_a_shop_without_a_bus() -> None:
    base = load(COMPOSE_DIR / BASE_FILE)

    assert "bus" not in base["services"]
    assert any("bus" in s.get("depends_on", {}) for s in base["services"].values())


@pytest.mark.parametrize("variant", VARIANTS, ids=lambda v: v.name)
def test_every_dependency_can_be_met(variant: Variant) -> None:
    assert dependency_problems(model_of(variant)) == []


def test_waiting_for_the_health_of_an_unchecked_container_is_caught() -> None:
    model = copy.deepcopy(model_of(VARIANTS[0]))
    del model["services"]["postgres"]["healthcheck"]
    model["services"]["order-api"]["depends_on"]["order-migrate"] = {"condition": "service_healthy"}

    problems = dependency_problems(model)

    assert "order-api waits for postgres to be healthy: it has no check" in problems
    assert "order-api waits for order-migrate to be healthy: it has no check" in problems


@pytest.mark.parametrize("variant", VARIANTS, ids=lambda v: v.name)
def test_every_long_running_container_is_health_checked(variant: Variant) -> None:
    assert health_problems(model_of(variant)) == []


def test_a_container_without_a_health_check_is_caught() -> None:
    model = copy.deepcopy(model_of(VARIANTS[0]))
    del model["services"]["bus"]["healthcheck"]

    assert health_problems(model) == ["bus runs on without a health check"]


@pytest.mark.parametrize("variant", VARIANTS, ids=lambda v: v.name)
def test_each_process_waits_for_its_own_migration(variant: Variant) -> None:
    assert migration_problems(model_of(variant)) == []


def test_a_process_that_may_outrun_its_migration_is_caught() -> None:
    model = copy.deepcopy(model_of(VARIANTS[0]))
    del model["services"]["payment-worker"]["depends_on"]["payment-migrate"]
    del model["services"]["console"]["depends_on"]["notification-migrate"]

    assert migration_problems(model) == [
        "payment-worker may start before shop.payment's migration",
        "console may start before shop.notification's migration",
    ]


@pytest.mark.parametrize("variant", VARIANTS, ids=lambda v: v.name)
def test_no_container_runs_as_root(variant: Variant) -> None:
    assert root_problems(model_of(variant)) == []


def test_a_container_running_as_root_is_caught() -> None:
    model = copy.deepcopy(model_of(VARIANTS[0]))
    model["services"]["order-api"]["user"] = "0:0"
    del model["services"]["mailpit"]["user"]

    assert root_problems(model) == [
        "mailpit runs as the image default (root)",
        "order-api runs as 0:0",
    ]


@pytest.mark.parametrize("variant", VARIANTS, ids=lambda v: v.name)
def test_each_process_is_stopped_after_it_could_finish(variant: Variant) -> None:
    assert stop_problems(model_of(variant)) == []


def test_a_worker_killed_before_its_drain_ends_is_caught() -> None:
    model = copy.deepcopy(model_of(VARIANTS[0]))
    model["services"]["notification-worker"]["stop_grace_period"] = "30s"

    assert stop_problems(model) == [
        "notification-worker: stop_grace_period 30.0 s, it needs more than 30.0 s"
    ]


# -- settings --------------------------------------------------------------------------------


def _services_of(variant: Variant, **overrides: str) -> list[tuple[str, Process | None, Model]]:
    return list(shop_services(model_of(variant, **overrides)))


@pytest.mark.parametrize("variant", VARIANTS, ids=lambda v: v.name)
def test_every_variable_is_one_the_settings_read(variant: Variant) -> None:
    unknown = {
        name: unknown_variables(environment(service), settings_classes(process))
        for name, process, service in _services_of(variant)
    }

    assert {name: found for name, found in unknown.items() if found} == {}


@pytest.mark.parametrize("variant", VARIANTS, ids=lambda v: v.name)
def test_only_the_shop_s_processes_get_its_variables(variant: Variant) -> None:
    model = model_of(variant)
    ours = {name for name, _, _ in shop_services(model)}
    strays = {
        name: [variable for variable in environment(service) if variable.startswith("SHOP_")]
        for name, service in model["services"].items()
        if name not in ours
    }

    assert {name: found for name, found in strays.items() if found} == {}


@pytest.mark.parametrize("variant", VARIANTS, ids=lambda v: v.name)
def test_every_process_says_its_environment(variant: Variant) -> None:
    unsaid = {
        name: unnamed_environments(environment(service), settings_classes(process))
        for name, process, service in _services_of(variant)
    }

    assert {name: found for name, found in unsaid.items() if found} == {}


def test_a_process_that_does_not_say_its_environment_is_caught() -> None:
    _, process, service = next(s for s in _services_of(VARIANTS[0]) if s[0] == "console")
    env = {k: v for k, v in environment(service).items() if k != "SHOP_OPS_ENVIRONMENT"}

    assert unnamed_environments(env, settings_classes(process)) == ["SHOP_OPS_ENVIRONMENT"]


def test_a_misspelt_variable_is_caught() -> None:
    _, process, service = next(s for s in _services_of(VARIANTS[0]) if s[0] == "order-api")
    env = {**environment(service), "SHOP_ORDER_DATABSE_URL": "postgresql://x@db/shop"}

    assert process is not None
    assert unknown_variables(env, process.settings) == ["SHOP_ORDER_DATABSE_URL"]


@pytest.mark.parametrize("variant", VARIANTS, ids=lambda v: v.name)
def test_with_the_example_settings_every_process_starts_and_points_away_from_itself(
    variant: Variant,
) -> None:
    for name, process, service in _services_of(variant):
        env = environment(service)
        for cls in settings_classes(process):
            instance = start(cls, process, env)
            prefix = str(cls.model_config.get("env_prefix", ""))
            assert loopback_defaults(instance, env, prefix) == [], name


def _networks(service: Model) -> set[str]:
    """The compose networks a service is on (``default`` unless it names others; none
    with a network_mode of its own)."""
    if "network_mode" in service:
        return set()
    return set(service.get("networks") or ["default"])


def _names_on_the_network(name: str, service: Model) -> set[str]:
    """What resolves to the service on its networks: its name and its aliases."""
    networks = service.get("networks")
    aliases = (
        {alias for network in networks.values() for alias in (network or {}).get("aliases", [])}
        if isinstance(networks, dict)
        else set()
    )
    return {name} | aliases


def worker_reach_problems(model: Model) -> list[str]:
    """The console and shopctl read each worker's /metrics (the consumers' counts) at its
    SHOP_OPS_*_WORKER_URL: a name of that worker's container, on its health port, which
    listens beyond its loopback, over a network both are on."""
    services = list(shop_services(model))
    workers = [(n, p, s) for n, p, s in services if p is not None and p.role == "worker"]
    problems = []
    for name, process, service in services:
        if OpsSettings not in settings_classes(process):
            continue
        ops = load_settings(OpsSettings, environment(service))
        assert isinstance(ops, OpsSettings)
        for worker, worker_process, worker_service in workers:
            assert worker_process is not None
            url = urlsplit(ops.worker_url(bus_of(worker_process).name))
            listens = start(worker_process.settings[0], worker_process, environment(worker_service))
            host = str(getattr(listens, worker_process.host_setting))
            port = int(getattr(listens, worker_process.port_setting))
            where = f"{name} asks {url.geturl()}"
            if url.hostname not in _names_on_the_network(worker, worker_service):
                problems.append(f"{where}: not {worker}")
            elif url.port != port:
                problems.append(f"{where}: {worker}'s health port is {port}")
            elif is_loopback(host):
                problems.append(f"{where}: {worker} listens on {host}")
            elif not _networks(service) & _networks(worker_service):
                problems.append(f"{where}: {name} and {worker} share no network")
    return problems


@pytest.mark.parametrize("variant", VARIANTS, ids=lambda v: v.name)
def test_the_console_reaches_each_worker_s_health_port(variant: Variant) -> None:
    assert worker_reach_problems(model_of(variant)) == []


def test_a_worker_the_console_cannot_reach_is_caught() -> None:
    model = copy.deepcopy(model_of(VARIANTS[0]))
    model["services"]["order-worker"]["environment"]["SHOP_ORDER_WORKER_HEALTH_HOST"] = "127.0.0.1"
    model["services"]["console"]["environment"]["SHOP_OPS_PAYMENT_WORKER_URL"] = (
        "http://payment-worker:9101"
    )
    model["services"]["notification-worker"]["networks"] = ["mail"]

    problems = worker_reach_problems(model)

    assert "console asks http://order-worker:9101: order-worker listens on 127.0.0.1" in problems
    assert (
        "console asks http://payment-worker:9101: payment-worker's health port is 9102" in problems
    )
    assert (
        "console asks http://notification-worker:9103: console and notification-worker share "
        "no network"
    ) in problems
    assert (
        "shopctl asks http://notification-worker:9103: shopctl and notification-worker share no "
        "network"
    ) in problems


def _secret_inputs(variant: Variant) -> set[str]:
    """The .env variables the secrets settings are made from."""
    raw_files = "\n".join(path.read_text() for path in variant.files)
    secret_names = {
        variable
        for _, process, _ in _services_of(variant)
        for cls in settings_classes(process)
        for variable in secret_variables(cls)
    }
    inputs = set()
    for line in raw_files.splitlines():
        name, _, value = line.strip().partition(":")
        if name in secret_names:
            inputs |= variables_used(value)
    return inputs


SECRETS_USED: dict[str, set[str]] = {
    "order-migrate": {"SHOP_ORDER_DATABASE_URL"},
    "order-seed": {"SHOP_ORDER_DATABASE_URL"},
    "order-api": {"SHOP_ORDER_DATABASE_URL", "SHOP_ORDER_JWT_SECRET"},
    "order-worker": {"SHOP_ORDER_DATABASE_URL", "SHOP_ORDER_OPERATOR_TOKEN"},
    "payment-migrate": {"SHOP_PAYMENT_DATABASE_URL"},
    "payment-api": {
        "SHOP_PAYMENT_DATABASE_URL",
        "SHOP_PAYMENT_WEBHOOK_SECRETS",
        "SHOP_PAYMENT_MIDTRANS_SERVER_KEY",
    },
    "payment-worker": {
        "SHOP_PAYMENT_DATABASE_URL",
        "SHOP_PAYMENT_OPERATOR_TOKEN",
        "SHOP_PAYMENT_MIDTRANS_SERVER_KEY",
        "SHOP_PAYMENT_SHOP_GATEWAY_API_KEY",
    },
    "notification-migrate": {"SHOP_NOTIFICATION_DATABASE_URL"},
    "notification-worker": {"SHOP_NOTIFICATION_DATABASE_URL", "SHOP_NOTIFICATION_OPERATOR_TOKEN"},
}
"""The secrets each service's process uses, as in Kubernetes (test_k8s_process_secrets);
the bus's credentials besides, for the workers, the only ones on the bus."""


def secret_problems(model: Model) -> list[str]:
    problems = []
    for name, process, service in shop_services(model):
        if process is None or process.kind not in SECRETS_USED:
            continue
        given = {
            variable
            for cls in process.settings
            for variable in secret_variables(cls)
            if variable in environment(service)
        }
        on_the_bus = (
            {v for v in given if "_MESSAGING__" in v} if process.role == "worker" else set()
        )
        problems += [
            f"{name} gets {v}" for v in sorted(given - SECRETS_USED[process.kind] - on_the_bus)
        ]
    return problems


@pytest.mark.parametrize("variant", VARIANTS, ids=lambda v: v.name)
def test_each_process_gets_only_the_secrets_it_uses(variant: Variant) -> None:
    assert secret_problems(model_of(variant)) == []


def test_a_secret_given_to_a_process_that_does_not_use_it_is_caught() -> None:
    model = copy.deepcopy(model_of(VARIANTS[0]))
    model["services"]["order-migrate"]["environment"]["SHOP_ORDER_JWT_SECRET"] = "x" * 32
    model["services"]["payment-api"]["environment"][
        "SHOP_PAYMENT_MESSAGING__KAFKA__SASL_PASSWORD"
    ] = "x"

    assert secret_problems(model) == [
        "order-migrate gets SHOP_ORDER_JWT_SECRET",
        "payment-api gets SHOP_PAYMENT_MESSAGING__KAFKA__SASL_PASSWORD",
    ]


@pytest.mark.parametrize("variant", VARIANTS, ids=lambda v: v.name)
def test_in_production_the_example_secrets_are_refused(variant: Variant) -> None:
    services = _services_of(
        variant, SHOP_ENVIRONMENT="production", SHOP_CONSOLE_SECURE_COOKIE="true"
    )
    refused = set()
    for _, process, service in services:
        for cls in settings_classes(process):
            try:
                start(cls, process, environment(service))
            except ValidationError:
                refused.add(cls)

    assert refused >= {OrderSettings, PaymentSettings, ConsoleSettings}


@pytest.mark.parametrize("variant", VARIANTS, ids=lambda v: v.name)
def test_in_production_with_real_secrets_only_a_plaintext_bus_is_refused(variant: Variant) -> None:
    real = {name: stand_in(name) for name in _secret_inputs(variant)}
    services = _services_of(
        variant,
        SHOP_ENVIRONMENT="production",
        SHOP_CONSOLE_SECURE_COOKIE="true",
        # Midtrans itself, not its sandbox (which production refuses).
        SHOP_MIDTRANS_API_URL="https://api.midtrans.com",
        **real,
    )

    assert real, "no secret comes from .env"
    refused: dict[str, list[str]] = {}
    for name, process, service in services:
        for cls in settings_classes(process):
            try:
                start(cls, process, environment(service))
            except ValidationError as error:
                refused[name] = [str(e["msg"]) for e in error.errors()]
    if variant.name != "kafka":
        assert refused == {}
        return
    # The example's broker is one container on the stack's own network, speaking
    # PLAINTEXT: production refuses that bus (anyone reaching it could write any topic),
    # and nothing else. A deployment on Kafka points the services at an authenticated
    # cluster (SASL_SSL), as the k8s overlays do.
    assert refused
    for problems in refused.values():
        assert len(problems) == 1
        assert "KAFKA__SECURITY_PROTOCOL is PLAINTEXT" in problems[0]


# -- .env.example ----------------------------------------------------------------------------


def test_env_example_gives_every_variable_the_files_need() -> None:
    documented = set(read_dotenv(ENV_EXAMPLE))
    needed = set().union(*(required_variables(p.read_text()) for p in COMPOSE_DIR.glob("*.yaml")))

    assert needed - documented == set()


def test_env_example_holds_nothing_the_files_do_not_read() -> None:
    used = set().union(*(variables_used(p.read_text()) for p in COMPOSE_DIR.glob("*.yaml")))

    assert set(read_dotenv(ENV_EXAMPLE)) - used - {"COMPOSE_FILE"} == set()


def test_env_example_names_each_variant_and_starts_on_one() -> None:
    chosen = read_dotenv(ENV_EXAMPLE)["COMPOSE_FILE"]
    alternatives = commented_settings(ENV_EXAMPLE).get("COMPOSE_FILE", [])

    assert chosen in {variant.compose_file for variant in VARIANTS}
    assert {chosen, *alternatives} == {variant.compose_file for variant in VARIANTS}
