"""Where the deployment files are, from the repository's root."""

from __future__ import annotations

from pathlib import Path
from typing import Final

ROOT: Final = Path(__file__).resolve().parents[2]
DOCKERFILE: Final = ROOT / "Dockerfile"
DOCKERIGNORE: Final = ROOT / ".dockerignore"
MAKEFILE: Final = ROOT / "Makefile"
COMPOSE_DIR: Final = ROOT / "compose"
K8S_DIR: Final = ROOT / "k8s"
OVERLAYS_DIR: Final = K8S_DIR / "overlays"
SCHEMAS_DIR: Final = Path(__file__).parent / "schemas"

KUBERNETES_VERSION: Final = "1.32"
"""The Kubernetes release whose API schemas every object must satisfy (the oldest the
manifests support: the preStop sleep action is on by default since 1.30)."""


def overlays() -> list[str]:
    """Every overlay there is (a folder of k8s/overlays with a kustomization)."""
    return sorted(
        path.name for path in OVERLAYS_DIR.iterdir() if (path / "kustomization.yaml").is_file()
    )
