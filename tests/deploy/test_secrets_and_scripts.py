"""The Secrets the overlays name are the ones their documentation and scripts make: the
dev overlay's create-secrets.sh makes every key a dev workload reads, k8s/README.md lists
every key production reads, and Postgres' first-start script reads what it is given."""

from __future__ import annotations

import re

import pytest

from .compose_model import ENV_EXAMPLE, environment, read_dotenv, variants
from .manifests import Manifest, SecretKey, container_env, containers, named, workloads
from .repository import COMPOSE_DIR, K8S_DIR, OVERLAYS_DIR, overlays
from .shop_k8s import overlay_objects

CREATE_SECRETS = OVERLAYS_DIR / "dev" / "create-secrets.sh"
DATABASE_SCRIPTS = (
    COMPOSE_DIR / "postgres" / "create-databases.sh",
    OVERLAYS_DIR / "dev" / "infra" / "create-databases.sh",
)


def referenced(objects: list[Manifest]) -> set[tuple[str, str]]:
    """(Secret, key) of every secretKeyRef of every container."""
    return {
        (value.name, value.key)
        for workload in workloads(objects)
        for container in containers(workload)
        for value in container_env(container, objects).values()
        if isinstance(value, SecretKey)
    }


def made_by_script(text: str) -> set[tuple[str, str]]:
    """(Secret, key) of each ``create secret generic NAME --from-literal=KEY=…``."""
    joined = re.sub(r"\\\n\s*", " ", text)
    made = set()
    for name, arguments in re.findall(r"create secret generic (\S+)([^\n]*)", joined):
        made |= {(name, key) for key in re.findall(r"--from-literal=([\w.-]+)=", arguments)}
    return made


def test_create_secrets_makes_every_key_the_dev_overlay_reads() -> None:
    assert referenced(overlay_objects("dev")) == made_by_script(CREATE_SECRETS.read_text())


def test_a_key_the_script_forgets_is_caught() -> None:
    text = CREATE_SECRETS.read_text().replace("--from-literal=jwt-secret=", "--from-literal=jwt=")

    assert ("order-service-secrets", "jwt-secret") in (
        referenced(overlay_objects("dev")) - made_by_script(text)
    )


@pytest.mark.parametrize("name", [name for name in overlays() if name != "dev"])
def test_the_readme_lists_every_secret_an_overlay_reads(name: str) -> None:
    readme = (K8S_DIR / "README.md").read_text()
    listed = set(re.findall(r"`([a-z0-9-]+)` / `([a-z0-9-]+)`", readme))

    assert referenced(overlay_objects(name)) - listed == set()


def test_both_first_start_scripts_of_postgres_are_the_same() -> None:
    compose, kubernetes = (path.read_text() for path in DATABASE_SCRIPTS)

    assert compose == kubernetes


def _script_variables() -> set[str]:
    text = DATABASE_SCRIPTS[0].read_text()
    return set(re.findall(r'"\$([A-Z_]+)"', text)) - {"POSTGRES_USER"}


def test_postgres_is_given_every_password_its_script_reads() -> None:
    model = variants()[0].model(read_dotenv(ENV_EXAMPLE))
    postgres = named(overlay_objects("dev"), "StatefulSet", "postgres")
    given = set(container_env(containers(postgres)[0], overlay_objects("dev")))

    assert _script_variables()
    assert _script_variables() <= set(environment(model["services"]["postgres"]))
    assert _script_variables() <= given
