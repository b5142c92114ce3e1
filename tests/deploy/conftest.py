"""The deployment files checked offline, as a cluster's admission and docker compose would
check them, with nothing running: every overlay is built once per session."""

from __future__ import annotations

import pytest

from .manifests import Manifest
from .repository import overlays
from .shop_k8s import overlay_objects


@pytest.fixture(params=overlays())
def overlay(request: pytest.FixtureRequest) -> str:
    """Each overlay of k8s/overlays in turn."""
    name: str = request.param
    return name


@pytest.fixture
def objects(overlay: str) -> list[Manifest]:
    """What the overlay builds."""
    return overlay_objects(overlay)
