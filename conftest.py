"""Where the tests' shared fixtures come from.

``postgres_server``, ``database_url``, ``module_database_url``, ``kafka_cluster``,
``aws_endpoint``, ``smtp_sink``, ``unique_name`` and the ``devstack_*`` fixtures are defined
in :mod:`shop.devstack.pytest_plugin`. It is registered once, as a pytest plugin, by the
``pytest11`` entry point in ``libs/devstack/pyproject.toml``: installing the workspace
(``make install``) is what makes them available to every test, with no import. Do not list
it in ``pytest_plugins`` here as well: pytest refuses a plugin registered twice.

The plugin also marks each test by its tier folder (``unit/``, ``integration/``,
``contract/``, ``e2e/``, ``chaos/``, ``deploy/``). The table of fixtures, and the helpers of
``shop.devstack.testing`` and ``shop.messaging.testing``, are in ``libs/devstack/README.md``.
"""

from collections.abc import Iterator
from typing import Any

import pytest
import structlog

from shop.messaging.testing import stop_recording_spans

LONGEST_FIRST = (
    "tests/chaos/test_chaos.py",
    "tests/e2e/test_order_flows.py",
)
"""The files that run longest (each starts stacks of its own), in the order they start: run
side by side (``make test``, a file to a process), they start first and the rest fills in
around them, instead of ending the run alone. ``make test`` keeps this order
(``--no-loadscope-reorder``)."""


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    def rank(item: pytest.Item) -> int:
        path = item.path.as_posix()
        found = [n for n, longest in enumerate(LONGEST_FIRST) if f"/{longest}" in path]
        return found[0] if found else len(LONGEST_FIRST)

    items.sort(key=rank)  # stable: the rest keeps its order


@pytest.fixture(autouse=True, scope="session")
def _loggers_never_cached() -> Iterator[None]:
    """Tests configure logging again and again (every worker built in-process does) and
    capture it (``structlog.testing.capture_logs``). A logger cached on first use keeps the
    processors of its day, so its lines would escape the capture of a later test, which
    would then pass or fail by the order the tests ran in."""
    configure = structlog.configure

    def uncached(**settings: Any) -> None:
        configure(**{**settings, "cache_logger_on_first_use": False})

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(structlog, "configure", uncached)
        yield


@pytest.fixture(autouse=True)
def _untraced_after_each_test() -> Iterator[None]:
    """A test that records spans (``recording_spans``) or configures tracing leaves none on
    for the next one, which runs as an untraced process does."""
    yield
    stop_recording_spans()


def _load_hypothesis_profile() -> None:
    """Property tests (hypothesis, and schemathesis on top of it) draw the same examples on
    every run, on a laptop as in CI (``.ci/run`` is ``make test``): a failure there is a
    failure here, and no example database is kept. No deadline: a test asserts behaviour,
    never speed, and a loaded machine must not fail it. ``SHOP_HYPOTHESIS_PROFILE=explore``
    draws new examples on every run instead, and replays the failures it found first."""
    import os  # noqa: PLC0415 (this setup's own imports, with it)

    from hypothesis import settings  # noqa: PLC0415

    settings.register_profile("shop", derandomize=True, database=None, deadline=None)
    settings.register_profile(
        "explore",
        settings.get_profile("shop"),
        derandomize=False,
        database=settings.get_profile("default").database,
    )
    settings.load_profile(os.environ.get("SHOP_HYPOTHESIS_PROFILE", "shop"))


_load_hypothesis_profile()
