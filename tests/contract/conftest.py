"""Settings for every contract test."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _pact_reports_nothing_home(monkeypatch: pytest.MonkeyPatch) -> None:
    """The Pact library otherwise sends usage statistics over the network from each
    verification: the tests stay offline."""
    monkeypatch.setenv("PACT_DO_NOT_TRACK", "true")
