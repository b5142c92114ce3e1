"""Every test of the console reads settings of its own making: none from this machine's
``SHOP_CONSOLE_*`` or ``SHOP_OPS_*`` variables, nor from the env file a running
``make run`` wrote."""

from __future__ import annotations

import os
from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def isolated_settings(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in list(os.environ):
        if name.startswith(("SHOP_OPS_", "SHOP_CONSOLE_")):
            monkeypatch.delenv(name)
    monkeypatch.setenv("SHOP_OPS_ENV_FILE", str(tmp_path / "no-such-shop.env"))
