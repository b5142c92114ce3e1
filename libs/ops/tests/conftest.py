"""Every test of shop.ops reads settings of its own making: none from this machine's
``SHOP_OPS_*`` variables or from the env file a running ``make run`` wrote."""

from __future__ import annotations

import os
from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def isolated_settings(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in list(os.environ):
        if name.startswith("SHOP_OPS_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("SHOP_OPS_ENV_FILE", str(tmp_path / "no-such-shop.env"))
