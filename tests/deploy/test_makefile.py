"""The Makefile installs what a run needs and no more: Chromium for a run that may select
the browser tests, none for one that picks other tiers by marker (checked with ``make -n``,
which prints the recipe without running it)."""

from __future__ import annotations

import re
import subprocess

import pytest

from .repository import ROOT

NO_CHROMIUM = "/nonexistent/chromium"


def recipe(pytest_args: str) -> str:
    done = subprocess.run(
        ["make", "-n", "pytest", f"PYTEST_ARGS={pytest_args}", f"CHROMIUM={NO_CHROMIUM}"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout


@pytest.mark.parametrize("args", ["", "-m integration", "-m 'not e2e'", "-m browser", "-x"])
def test_a_run_that_may_select_the_browser_tests_installs_chromium(args: str) -> None:
    assert "apt-get install" in recipe(args)


@pytest.mark.parametrize("args", ["-m unit", "-m contract", "-m 'unit or contract'", "-m e2e"])
def test_a_run_of_other_tiers_by_marker_installs_no_chromium(args: str) -> None:
    printed = recipe(args)
    assert "apt-get install" not in printed
    assert re.search(rf"pytest .*{re.escape(args)}$", printed, re.MULTILINE), printed
