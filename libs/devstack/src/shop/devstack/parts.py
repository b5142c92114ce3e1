"""Each piece of infrastructure as a *part*: spawned, awaited, stopped, the same way whether
this process runs it or someone else does."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Protocol
from urllib.parse import urlsplit

from shop.devstack.aws import AwsEndpoint, MotoServer
from shop.devstack.errors import DevstackError
from shop.devstack.kafka import KafkaCluster, TansuBroker
from shop.devstack.postgres import EmbeddedPostgres, PostgresServer
from shop.devstack.process import port_accepts
from shop.devstack.settings import DevstackSettings


class Part(Protocol):
    name: str

    def spawn(self) -> None:
        """Start the work of starting (quick); readiness is awaited separately."""

    def wait_ready(self) -> None:
        """Return once the part serves requests; raise DevstackError if it never will."""

    def stop(self) -> None:
        """Stop what ``spawn`` started; safe to call twice or before ``spawn``."""


@dataclass
class ExternalPart:
    """A server someone else runs: checked for reachability, never started or stopped."""

    name: str
    host: str
    port: int

    def spawn(self) -> None:
        pass

    def wait_ready(self) -> None:
        if not port_accepts(self.host, self.port, timeout=3):
            raise DevstackError(f"{self.name}: nothing answers at {self.host}:{self.port}")

    def stop(self) -> None:
        pass


def postgres_part(settings: DevstackSettings, workdir: Path) -> tuple[Part, PostgresServer]:
    if settings.postgres_url:
        server = PostgresServer.from_url(settings.postgres_url)
        return ExternalPart("postgres", server.host, server.port), server
    embedded = EmbeddedPostgres(workdir / "postgres", timeout=settings.startup_timeout)
    return embedded, embedded.server


def kafka_part(settings: DevstackSettings, workdir: Path) -> tuple[Part, KafkaCluster]:
    if settings.kafka_bootstrap:
        first = settings.kafka_bootstrap.split(",")[0].strip()
        host, _, port = first.rpartition(":")
        if not host or not port.isdigit():
            raise DevstackError(f"kafka: bootstrap address {first!r} is not host:port")
        return ExternalPart("kafka", host, int(port)), KafkaCluster(settings.kafka_bootstrap)
    broker = TansuBroker(workdir / "kafka", timeout=settings.startup_timeout)
    return broker, broker.cluster


def aws_part(settings: DevstackSettings, workdir: Path) -> tuple[Part, AwsEndpoint]:
    if settings.aws_endpoint:
        parts = urlsplit(settings.aws_endpoint)
        if not parts.hostname:
            raise DevstackError(f"aws: endpoint {settings.aws_endpoint!r} is not a URL")
        port = parts.port or (443 if parts.scheme == "https" else 80)
        endpoint = AwsEndpoint(url=settings.aws_endpoint, region=settings.aws_region)
        return ExternalPart("aws", parts.hostname, port), endpoint
    moto = MotoServer(workdir / "aws", timeout=settings.startup_timeout)
    return moto, moto.endpoint
