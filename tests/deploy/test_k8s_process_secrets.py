"""Each process gets the secrets it uses and no other: a migration step only its
database's, an API the keys of what it serves, a worker those of what it calls, the
console its own. Where a service's production settings still demand a secret of a
process that never uses it, the table below says so, and a test shows the settings
demand it (once they do not, that test fails: drop the secret from the process)."""

from __future__ import annotations

import copy

import pytest
from pydantic import ValidationError

from .manifests import Manifest, SecretKey
from .shop_k8s import Running, shop_containers

ORDER_DB = SecretKey("order-service-secrets", "database-url")
PAYMENT_DB = SecretKey("payment-service-secrets", "database-url")
NOTIFICATION_DB = SecretKey("notification-service-secrets", "database-url")
ORDER_OWNER = SecretKey("order-service-secrets", "migration-database-url")
PAYMENT_OWNER = SecretKey("payment-service-secrets", "migration-database-url")
NOTIFICATION_OWNER = SecretKey("notification-service-secrets", "migration-database-url")
OPERATOR_TOKEN = SecretKey("operator-token", "token")
JWT = SecretKey("order-service-secrets", "jwt-secret")
WEBHOOK_SECRETS = SecretKey("payment-service-secrets", "webhook-secrets")
MIDTRANS_KEY = SecretKey("payment-service-secrets", "midtrans-server-key")
GATEWAY_KEY = SecretKey("payment-service-secrets", "shop-gateway-api-key")

USES: dict[str, set[SecretKey]] = {
    # The migrations change the schema: the owner role's URL; the rest only rows.
    "order-migrate": {ORDER_OWNER},
    "order-seed": {ORDER_DB},
    # Checks the customers' tokens.
    "order-api": {ORDER_DB, JWT},
    # Its internal API (/internal/v1 on the health port) takes the operator's token.
    "order-worker": {ORDER_DB, OPERATOR_TOKEN},
    "payment-migrate": {PAYMENT_OWNER},
    # Checks the webhooks' signatures: the shop format's secrets, Midtrans' server key.
    "payment-api": {PAYMENT_DB, WEBHOOK_SECRETS, MIDTRANS_KEY},
    # Calls the gateways' status and refund APIs.
    "payment-worker": {PAYMENT_DB, OPERATOR_TOKEN, MIDTRANS_KEY, GATEWAY_KEY},
    "notification-migrate": {NOTIFICATION_OWNER},
    "notification-worker": {
        NOTIFICATION_DB,
        OPERATOR_TOKEN,
        SecretKey("notification-service-secrets", "smtp-username"),
        SecretKey("notification-service-secrets", "smtp-password"),
    },
    "console": {
        SecretKey("console-secrets", "admin-password-hash"),
        SecretKey("console-secrets", "session-secret"),
        OPERATOR_TOKEN,
    },
}
"""What each process kind uses (container names; the dev overlay's order-seed too)."""

OWNER_URLS = {ORDER_OWNER, PAYMENT_OWNER, NOTIFICATION_OWNER}

SETTINGS_DEMAND: dict[str, set[SecretKey]] = {
    "order-migrate": {OPERATOR_TOKEN, JWT},
    "order-seed": {OPERATOR_TOKEN, JWT},
    "order-api": {OPERATOR_TOKEN},
    "order-worker": {JWT},
    "payment-migrate": {OPERATOR_TOKEN, WEBHOOK_SECRETS, MIDTRANS_KEY, GATEWAY_KEY},
    "payment-api": {OPERATOR_TOKEN, GATEWAY_KEY},
    "payment-worker": {WEBHOOK_SECRETS},
    "notification-migrate": {OPERATOR_TOKEN},
}
"""Secrets a process never uses but its service's production settings refuse to start
without (every process of a service reads the same settings class)."""


def _kafka_login(running: Running) -> set[SecretKey]:
    """On Kafka, the service's bus login: the processes that connect use it (the console
    too, for the lag); the migration steps get it because the services' settings judge
    the bus of every process in production."""
    return {
        value
        for name, value in running.env.items()
        if name.endswith("_MESSAGING__KAFKA__SASL_PASSWORD") and isinstance(value, SecretKey)
    }


def secret_problems(objects: list[Manifest]) -> list[str]:
    problems = []
    for running in shop_containers(objects):
        kind = running.container["name"]
        given = {value for value in running.env.values() if isinstance(value, SecretKey)}
        allowed = USES[kind] | SETTINGS_DEMAND.get(kind, set()) | _kafka_login(running)
        problems += [f"{running.name}: gets {key}" for key in sorted(given - allowed, key=str)]
    return problems


def test_each_process_gets_only_the_secrets_it_uses(objects: list[Manifest]) -> None:
    assert secret_problems(objects) == []


def test_a_secret_given_to_a_process_that_does_not_use_it_is_caught(
    objects: list[Manifest],
) -> None:
    changed = copy.deepcopy(objects)
    for running in shop_containers(changed):
        if running.container["name"] == "notification-migrate":
            running.container["env"].append(
                {
                    "name": "SHOP_NOTIFICATION_SMTP__PASSWORD",
                    "valueFrom": {
                        "secretKeyRef": {
                            "name": "notification-service-secrets",
                            "key": "smtp-password",
                        }
                    },
                }
            )

    assert any(
        p.endswith(
            "/notification-migrate: gets SecretKey(name='notification-service-secrets', "
            "key='smtp-password')"
        )
        for p in secret_problems(changed)
    )


def _demanded(objects: list[Manifest]) -> list[tuple[Running, str]]:
    return [
        (running, name)
        for running in shop_containers(objects)
        for name, value in running.env.items()
        if value in SETTINGS_DEMAND.get(running.container["name"], set())
    ]


def test_the_settings_still_demand_each_secret_a_process_gets_without_using_it(
    objects: list[Manifest],
) -> None:
    demanded = _demanded(objects)
    assert demanded
    still_demanded = []
    for running, variable in demanded:
        env = {name: value for name, value in running.env.items() if name != variable}
        try:
            Running(running.workload, running.container, running.process, env).settings()
        except ValidationError as refused:
            still_demanded.append(variable in str(refused))
        else:
            still_demanded.append(False)

    assert all(still_demanded), [
        f"{running.name}: {variable} is no longer demanded: drop it from the process"
        for (running, variable), demanded_now in zip(demanded, still_demanded, strict=True)
        if not demanded_now
    ]


@pytest.mark.parametrize("kind", sorted(SETTINGS_DEMAND))
def test_every_demanded_secret_names_a_process_kind_there_is(kind: str) -> None:
    assert kind in USES


def database_roles(objects: list[Manifest]) -> dict[str, str]:
    """Whose role each process reaches its database as: the owner's (the schema) or the
    app's (rows only)."""
    return {
        running.name: "owner" if value in OWNER_URLS else "app"
        for running in shop_containers(objects)
        for name, value in running.env.items()
        if name.endswith("_DATABASE_URL")
    }


def test_only_the_migrations_reach_the_database_as_its_owner(objects: list[Manifest]) -> None:
    roles = database_roles(objects)

    assert roles
    assert {name for name, role in roles.items() if role == "owner"} == {
        name for name in roles if name.endswith("-migrate")
    }
