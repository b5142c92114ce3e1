"""pytest fixtures for the whole repository: session-scoped servers, per-test isolation.

Servers start lazily, the first time a test asks for them, so a unit-test run starts
nothing. Every server started here is stopped at the end of the session, failed tests
or not; a server that cannot start fails its tests with one readable line.

Registered once, by the ``pytest11`` entry point in ``libs/devstack/pyproject.toml``, so a
test gets these fixtures by naming them, with no import or ``pytest_plugins`` (naming it
there too would register it twice, which pytest refuses). See ``libs/devstack/README.md``.
"""

from __future__ import annotations

import asyncio
import shutil
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import TypeVar

import pytest

from shop.devstack.aws import AwsEndpoint
from shop.devstack.errors import DevstackError
from shop.devstack.kafka import KafkaCluster
from shop.devstack.parts import Part, aws_part, kafka_part, postgres_part
from shop.devstack.postgres import PostgresServer
from shop.devstack.settings import DevstackSettings
from shop.devstack.smtp import SmtpSink

EndpointT = TypeVar("EndpointT")

_TIER_FOLDERS = frozenset({"unit", "integration", "contract", "e2e", "chaos", "deploy"})
"""A test in one of these folders gets the marker of the same name."""


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark each test by the tier folder it lives in (``tests/unit/…`` → ``unit``)."""
    for item in items:
        for folder in _TIER_FOLDERS.intersection(item.path.parts):
            item.add_marker(folder)


def _serve(part: Part, endpoint: EndpointT) -> Iterator[EndpointT]:
    """Start ``part``, hand out its endpoint for the session, stop it whatever happened."""
    try:
        part.spawn()
        part.wait_ready()
    except DevstackError as error:
        part.stop()
        pytest.fail(f"devstack: {error}", pytrace=False)
    try:
        yield endpoint
    finally:
        part.stop()


@pytest.fixture(scope="session")
def devstack_settings() -> DevstackSettings:
    return DevstackSettings()


@pytest.fixture(scope="session")
def devstack_workdir(devstack_settings: DevstackSettings) -> Iterator[Path]:
    if devstack_settings.workdir is not None:
        devstack_settings.workdir.mkdir(parents=True, exist_ok=True)
        yield devstack_settings.workdir
        return
    workdir = Path(tempfile.mkdtemp(prefix="shop-devstack-test-"))
    try:
        yield workdir
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


@pytest.fixture(scope="session")
def postgres_server(
    devstack_settings: DevstackSettings, devstack_workdir: Path
) -> Iterator[PostgresServer]:
    """A PostgreSQL server for the whole session (embedded, or the configured one)."""
    part, server = postgres_part(devstack_settings, devstack_workdir)
    yield from _serve(part, server)


@pytest.fixture(scope="session")
def kafka_cluster(
    devstack_settings: DevstackSettings, devstack_workdir: Path
) -> Iterator[KafkaCluster]:
    """A Kafka-protocol broker for the whole session (Tansu, or the configured cluster)."""
    part, cluster = kafka_part(devstack_settings, devstack_workdir)
    yield from _serve(part, cluster)


@pytest.fixture(scope="session")
def aws_endpoint(
    devstack_settings: DevstackSettings, devstack_workdir: Path
) -> Iterator[AwsEndpoint]:
    """An SQS/SNS endpoint for the whole session (moto, or the configured one)."""
    part, endpoint = aws_part(devstack_settings, devstack_workdir)
    yield from _serve(part, endpoint)


@pytest.fixture(scope="session")
def smtp_sink_server(devstack_workdir: Path) -> Iterator[SmtpSink]:
    sink = SmtpSink(mail_dir=devstack_workdir / "mail")
    yield from _serve(sink, sink)


@pytest.fixture
def smtp_sink(smtp_sink_server: SmtpSink) -> SmtpSink:
    """The session's SMTP sink, emptied for this test."""
    smtp_sink_server.clear()
    return smtp_sink_server


@pytest.fixture
def unique_name() -> str:
    """A short name no other test uses: a prefix for topics, queues and groups."""
    return f"t{uuid.uuid4().hex[:10]}"


def _fresh_database(server: PostgresServer) -> Iterator[str]:
    name = asyncio.run(server.create_database())
    try:
        yield server.url(name)
    finally:
        asyncio.run(server.drop_database(name))


@pytest.fixture
def database_url(postgres_server: PostgresServer) -> Iterator[str]:
    """URL of an empty database created for this test and dropped after it."""
    yield from _fresh_database(postgres_server)


@pytest.fixture(scope="module")
def module_database_url(postgres_server: PostgresServer) -> Iterator[str]:
    """URL of an empty database shared by the tests of one module."""
    yield from _fresh_database(postgres_server)
