"""Each process gets the secrets it uses and no other: a migration step only its
database's, an API the keys of what it serves, a worker those of what it calls, the
console its own; the bus login only the processes that connect to the bus. Each service's
production settings judge only what the process that reads them uses, so none needs
another's secret to start."""

from __future__ import annotations

import copy

from .manifests import Manifest, SecretKey
from .shop_k8s import Running, overlay_objects, shop_containers

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


def _kafka_login(running: Running) -> set[SecretKey]:
    """On Kafka, the service's bus login, for the processes that connect to the bus: the
    workers (the APIs publish through the outbox, which the worker's relay sends) and the
    console (for the lag). The migration and seed steps never touch it."""
    if running.process.role != "worker" and running.container["name"] != "console":
        return set()
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
        allowed = USES[kind] | _kafka_login(running)
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


def test_a_bus_login_given_to_a_process_that_does_not_connect_is_caught() -> None:
    changed = copy.deepcopy(overlay_objects("prod"))
    for running in shop_containers(changed):
        if running.container["name"] == "payment-api":
            running.container.setdefault("env", []).append(
                {
                    "name": "SHOP_PAYMENT_MESSAGING__KAFKA__SASL_PASSWORD",
                    "valueFrom": {"secretKeyRef": {"name": "payment-service", "key": "password"}},
                }
            )

    assert "payment-api/payment-api: gets SecretKey(name='payment-service', key='password')" in (
        secret_problems(changed)
    )


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
