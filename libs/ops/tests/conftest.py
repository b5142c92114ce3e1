"""Every test of shop.ops reads settings of its own making: none from this machine's
``SHOP_OPS_*`` variables or from the env file a running ``make run`` wrote."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
import structlog


@pytest.fixture(autouse=True)
def isolated_settings(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in list(os.environ):
        if name.startswith("SHOP_OPS_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("SHOP_OPS_ENV_FILE", str(tmp_path / "no-such-shop.env"))


@pytest.fixture(autouse=True)
def logging_left_as_it_was() -> Iterator[None]:
    """shopctl quiets the logs of the process it runs in; a test of it must not leave them
    quiet (or pointed at its captured stderr) for the tests after it."""
    saved = structlog.get_config()
    yield
    structlog.configure(**saved)
