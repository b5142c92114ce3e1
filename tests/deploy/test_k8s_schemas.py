"""Every overlay builds, and every object it makes is one the API server would take: the
Kubernetes kinds by the schemas of a named release (kubernetes-validate, strict: no field
the API does not have), KEDA's and Strimzi's kinds by their own CRDs (schemas/keda,
schemas/strimzi)."""

from __future__ import annotations

import copy
import functools
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml
from jsonschema import Draft7Validator

# kubernetes-validate ships no type information.
from kubernetes_validate import utils as kubernetes  # type: ignore[import-untyped]

from .manifests import Manifest, build, named
from .repository import K8S_DIR, KUBERNETES_VERSION, SCHEMAS_DIR, overlays
from .shop_k8s import overlay_objects

CRD_DIRS = (SCHEMAS_DIR / "keda", SCHEMAS_DIR / "strimzi")


@functools.cache
def crd_schemas() -> dict[tuple[str, str], dict[str, Any]]:
    """(apiVersion, kind) → the openAPIV3Schema of each vendored CRD's versions."""
    schemas: dict[tuple[str, str], dict[str, Any]] = {}
    for path in sorted(path for folder in CRD_DIRS for path in folder.glob("*.yaml")):
        crd = yaml.safe_load(path.read_text())
        group, kind = crd["spec"]["group"], crd["spec"]["names"]["kind"]
        for version in crd["spec"]["versions"]:
            schemas[(f"{group}/{version['name']}", kind)] = _closed(
                version["schema"]["openAPIV3Schema"]
            )
    return schemas


def _closed(schema: Any) -> Any:
    """The schema with every object that lists its properties closed to others: the API
    server prunes fields a structural schema does not declare, so a misspelt field
    would vanish silently instead of being refused."""
    if isinstance(schema, list):
        return [_closed(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    closed = {key: _closed(value) for key, value in schema.items()}
    if (
        "properties" in closed
        and "additionalProperties" not in closed
        and not closed.get("x-kubernetes-preserve-unknown-fields")
    ):
        closed["additionalProperties"] = False
    return closed


def schema_errors(item: Manifest) -> list[str]:
    """Why the API server would refuse ``item`` (none: it would take it)."""
    where = f"{item['kind']}/{item['metadata']['name']}"
    crd = crd_schemas().get((item["apiVersion"], item["kind"]))
    if crd is not None:
        return [
            f"{where}: {'/'.join(map(str, e.absolute_path))}: {e.message}"
            for e in Draft7Validator(crd).iter_errors(item)
        ]
    try:
        kubernetes.validate(item, KUBERNETES_VERSION, strict=True)
    except kubernetes.ValidationError as error:
        return [f"{where}: {'/'.join(map(str, error.path))}: {error.message}"]
    except kubernetes.SchemaNotFoundError as error:
        return [f"{where}: {error.message}"]
    return []


@pytest.mark.parametrize("name", overlays())
def test_the_overlay_builds(name: str) -> None:
    assert build(K8S_DIR / "overlays" / name)


def test_an_overlay_that_names_a_missing_file_does_not_build(tmp_path: Path) -> None:
    shutil.copytree(K8S_DIR, tmp_path / "k8s")
    kustomization = tmp_path / "k8s" / "overlays" / "dev" / "kustomization.yaml"
    kustomization.write_text(
        kustomization.read_text().replace("infra/kafka.yaml", "infra/kafak.yaml")
    )

    with pytest.raises(RuntimeError, match="kafak"):
        build(kustomization.parent)


def test_every_object_is_valid_for_kubernetes_keda_and_strimzi(objects: list[Manifest]) -> None:
    assert [error for item in objects for error in schema_errors(item)] == []


def test_the_keda_objects_are_checked_by_keda_s_schemas(objects: list[Manifest]) -> None:
    kinds = {item["kind"] for item in objects if item["apiVersion"].startswith("keda.sh/")}

    assert "ScaledObject" in kinds
    assert {kind for _, kind in crd_schemas()} >= kinds


def test_the_kafka_users_are_checked_by_strimzi_s_schema() -> None:
    user = named(overlay_objects("prod"), "KafkaUser", "order-service")
    broken = copy.deepcopy(user)
    broken["spec"]["authorization"]["acls"][0]["operations"] = ["Reed"]
    broken["spec"]["authentication"]["typ"] = "scram-sha-512"

    assert schema_errors(user) == []
    errors = schema_errors(broken)
    assert any("Reed" in error for error in errors)
    assert any("typ" in error for error in errors)


def test_a_misspelt_kubernetes_field_is_caught(objects: list[Manifest]) -> None:
    deployment = copy.deepcopy(named(objects, "Deployment", "order-api"))
    deployment["spec"]["template"]["spec"]["containers"][0]["imagePullPolcy"] = "Always"

    errors = schema_errors(deployment)

    assert len(errors) == 1
    assert "imagePullPolcy" in errors[0]


def test_a_value_of_the_wrong_type_is_caught(objects: list[Manifest]) -> None:
    budget = copy.deepcopy(named(objects, "PodDisruptionBudget", "order-worker"))
    budget["spec"]["maxUnavailable"] = ["one"]

    assert "maxUnavailable" in schema_errors(budget)[0]


def test_a_kind_no_schema_knows_is_caught(objects: list[Manifest]) -> None:
    unknown = copy.deepcopy(named(objects, "Deployment", "order-api"))
    unknown["apiVersion"] = "apps/v2"

    assert "Couldn't find schema" in schema_errors(unknown)[0]


def test_a_broken_scaled_object_is_caught(objects: list[Manifest]) -> None:
    scaled = copy.deepcopy(named(objects, "ScaledObject", "order-worker"))
    scaled["spec"]["maxReplicas"] = 12
    scaled["spec"]["triggers"][0]["metadata"]["lagThreshold"] = 200
    del scaled["spec"]["scaleTargetRef"]

    errors = schema_errors(scaled)

    assert any("maxReplicas" in error for error in errors)
    assert any("lagThreshold" in error for error in errors)
    assert any("scaleTargetRef" in error for error in errors)
