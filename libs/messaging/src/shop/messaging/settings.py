"""Configuration objects. The library never reads the environment: each service's own
pydantic-settings class holds a :class:`MessagingSettings` and passes it in."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from pathlib import Path
from typing import Any, Final, Literal, Self, TypeVar

from pydantic import BaseModel, ConfigDict, Field, SecretStr, model_validator

from shop.messaging.breaker import BreakerSettings

Environment = Literal["development", "test", "production"]
"""Where a process runs: ``development`` (one developer's machine, ``make run``), ``test``
(the test suites) or ``production`` (every deployment: the image and the manifests say so)."""

MIN_SECRET_BYTES: Final = 32
DEFAULT_DEAD_LETTER_RETENTION: Final = 7 * 24 * 3600
"""Seconds a broker keeps a dead letter for the worker to collect (a transport's default)."""


def unfit_secret(
    variable: str, secret: SecretStr | str | None, development: Collection[str] = ()
) -> str | None:
    """Why ``secret`` must not be deployed, naming ``variable`` and never the value; None
    when it is fit. The one rule of every secret of the shop (signing keys, API keys, the
    console's session secret), so that no service judges its secrets more leniently than
    another: it is set and not empty; it is none of ``development`` (the development
    defaults are in the repository, so anyone may sign with them); and it holds at least
    32 bytes, the size of an HMAC-SHA256 key (RFC 7518 asks as much of an HS256 key),
    because a shorter key can be guessed offline from a single message signed with it."""
    value = secret.get_secret_value() if isinstance(secret, SecretStr) else secret
    if not value:
        return f"{variable} must be set"
    if value in development:
        return f"{variable} must not be the development value"
    if len(value.encode()) < MIN_SECRET_BYTES:
        return f"{variable} must be at least {MIN_SECRET_BYTES} bytes"
    return None


def require_environment(data: Any, variable: str) -> Any:
    """Refuse settings made without their environment (a ``mode="before"`` step of each
    service's settings, ``variable`` its ``SHOP_<SERVICE>_ENVIRONMENT``). There is no
    default: a process that fell back to development would take the development secrets
    and start, and one that fell back to production would refuse a developer's machine."""
    if isinstance(data, dict) and not data.get("environment"):
        raise ValueError(f"{variable} must be set: development, test or production")
    return data


_Process = TypeVar("_Process", bound=str)
_Part = TypeVar("_Part", bound=str)


def used_by(uses: Mapping[_Process, Collection[_Part]], process: _Process | None) -> set[_Part]:
    """The parts of a service's settings that ``process`` uses, by the service's table of
    what each of its processes uses (``uses``): production judges only those, so that no
    process is refused for a secret it never holds. A process that does not say which it
    is (a test, a tool) is judged on what any of them uses, as strictly as the strictest."""
    if process is None:
        return {part for parts in uses.values() for part in parts}
    return set(uses[process])


KafkaSecurityProtocol = Literal["PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"]
"""Kafka's names for how a client reaches the brokers: with or without TLS, with or without
a SASL login."""
ScramMechanism = Literal["SCRAM-SHA-512", "SCRAM-SHA-256"]

_SASL: Final = ("SASL_PLAINTEXT", "SASL_SSL")
_TLS: Final = ("SSL", "SASL_SSL")


class KafkaSettings(BaseModel):
    # A refused value is never echoed: the login's password is among them.
    model_config = ConfigDict(hide_input_in_errors=True)

    bootstrap_servers: str = "127.0.0.1:9092"
    security_protocol: KafkaSecurityProtocol = "PLAINTEXT"
    """``SASL_SSL`` (a SCRAM login over TLS) or ``SSL`` with a client certificate (mutual
    TLS, the certificate's subject is the principal) in production, which refuses the
    other two: over ``PLAINTEXT`` anyone who reaches a broker may write any topic (a
    ``payment.received`` marks an order paid), and ``SASL_PLAINTEXT`` sends the login and
    every message in the clear. ``PLAINTEXT`` is for one developer's machine and the tests."""
    sasl_mechanism: ScramMechanism = "SCRAM-SHA-512"
    sasl_username: str | None = None
    """The service's principal on the bus (its ``KafkaUser``): required with SASL."""
    sasl_password: SecretStr | None = None
    ssl_cafile: Path | None = None
    """PEM file of the CA the brokers' certificates are checked against; unset, the
    system's trust store (a cluster with a private CA, as Strimzi's, needs it set)."""
    ssl_certfile: Path | None = None
    """PEM file of this client's certificate (mutual TLS), with ``ssl_keyfile``."""
    ssl_keyfile: Path | None = None
    ssl_key_password: SecretStr | None = None
    """The passphrase of ``ssl_keyfile``, when it is encrypted."""
    partitions: int = Field(default=6, ge=1)
    """Partitions of each topic this library creates (existing topics are left alone)."""
    replication_factor: int = Field(default=1, ge=1)
    session_timeout_ms: int = Field(default=10_000, ge=1_000)
    max_poll_interval_ms: int = Field(default=60 * 60 * 1000, ge=10_000)
    """How long a consumer may go without fetching before the group counts it gone. Its
    fetching waits while every slot holds a message waiting in place (a database outage,
    a provider's open breaker), which may last long: Kafka's 5 minutes would take its
    partitions away mid-outage, to a replica waiting on the same outage, and hand the
    held messages to both. A dead consumer is still found by its session timeout."""
    fetch_max_wait_ms: int = Field(default=100, ge=1, le=500)
    """Longest a consumer's fetch waits on the broker when nothing new is there. Kafka
    answers a waiting fetch as soon as a record arrives, so this only bounds the idle
    polls; a broker that answers at the end of the wait (the development broker) adds up
    to this to each hop, which at Kafka's 500 ms doubled a checkout's order→e-mail time."""
    client_id: str = "shop"
    request_timeout_ms: int = Field(default=40_000, ge=1_000)
    """How long a publish may wait for the broker before it counts as failed (the relay
    then keeps the rows and backs off)."""
    linger_ms: int = Field(default=5, ge=0)
    """How long the producer waits to fill a batch: a little latency for a lot of throughput."""
    max_request_size: int = Field(default=1024 * 1024, ge=64 * 1024)
    """Largest record the producer sends (the broker's ``message.max.bytes`` must allow
    it); a dead letter larger than this is kept as a prefix, its size and its digest."""

    @model_validator(mode="after")
    def security_is_complete(self) -> Self:
        """Refuse, anywhere, a security setting that could never connect: a SASL protocol
        without its login, a certificate without its key (or the other way round), TLS
        files with a protocol that uses no TLS."""
        problems = []
        if self.security_protocol in _SASL and not (self.sasl_username and self.sasl_password):
            problems.append(f"{self.security_protocol} needs sasl_username and sasl_password")
        if (self.ssl_certfile is None) != (self.ssl_keyfile is None):
            problems.append("ssl_certfile and ssl_keyfile go together")
        tls_files = (self.ssl_cafile, self.ssl_certfile, self.ssl_keyfile)
        if self.security_protocol not in _TLS and any(f is not None for f in tls_files):
            problems.append(f"{self.security_protocol} uses no TLS: ssl_* files would be ignored")
        if problems:
            raise ValueError("; ".join(problems))
        return self

    @property
    def uses_tls(self) -> bool:
        return self.security_protocol in _TLS

    @property
    def uses_sasl(self) -> bool:
        return self.security_protocol in _SASL

    def unfit_for_production(self, prefix: str) -> list[str]:
        """Why this bus connection must not be deployed, each problem named by its variable
        (``prefix`` is e.g. ``SHOP_ORDER_MESSAGING__KAFKA__``); empty when fit: the
        brokers must know who each client is, over TLS."""
        variable = f"{prefix}SECURITY_PROTOCOL"
        if self.security_protocol == "PLAINTEXT":
            return [
                f"{variable} is PLAINTEXT: any pod that reaches the brokers could read and "
                "write every topic; set SASL_SSL (a SCRAM login) or SSL with a client "
                "certificate"
            ]
        if self.security_protocol == "SASL_PLAINTEXT":
            return [
                f"{variable} is SASL_PLAINTEXT: the login and every message would cross the "
                "network unencrypted; set SASL_SSL"
            ]
        if self.security_protocol == "SSL" and self.ssl_certfile is None:
            return [
                f"{variable} is SSL without {prefix}SSL_CERTFILE: the brokers would not know "
                "who this client is; set the client certificate and key, or use SASL_SSL"
            ]
        return []


class SqsSettings(BaseModel):
    endpoint_url: str | None = None
    """None means AWS itself; set it for moto or LocalStack."""
    region: str = "ap-southeast-3"
    access_key_id: str | None = None
    secret_access_key: str | None = None
    auto_create: bool = True
    """Create topics, queues, subscriptions and policies on start (idempotent)."""
    publish_concurrency: int = Field(default=8, ge=1)
    """PublishBatch calls in flight at once, each of up to 10 messages of distinct keys."""
    receive_concurrency: int = Field(default=2, ge=1)
    """Long-polling receive loops per consumer, each taking up to 10 messages."""
    wait_time_seconds: int = Field(default=20, ge=0, le=20)
    visibility_timeout: int = Field(default=30, ge=1, le=43_200)
    """Seconds a received message stays hidden; extended every third of it (counted from
    each call's start) while it waits or its handler runs. A worker killed with messages in
    hand gives them back after this long, so it is short (SQS's own default), yet an
    endpoint may stall for two thirds of it without a message showing again."""


class DeadLetterSettings(BaseModel):
    """How long dead letters are kept, where, and how they are looked after."""

    retention_days: float = Field(default=180, gt=0)
    """How long the service's store keeps a dead letter nobody redrove or purged: long,
    since some wait for a person (a flagged payment); the oldest's age is a metric."""
    broker_retention_hours: float = Field(
        default=DEFAULT_DEAD_LETTER_RETENTION / 3600, ge=1, le=14 * 24
    )
    """How long the broker keeps its copy (the dead-letter topic's ``retention.ms``, the
    dead-letter queue's ``MessageRetentionPeriod``, at most SQS's 14 days): it must outlast
    any stop of the workers that collect letters from there; and a Kafka copy of a purged
    letter outlives the purge by at most this (Kafka cannot delete one record)."""
    collect_interval: float = Field(default=1.0, gt=0)
    """Seconds between looks at the broker when no dead letter waits there."""
    cleanup_interval: float = Field(default=3600.0, gt=0)
    cleanup_batch_size: int = Field(default=1000, ge=1)
    cleanup_batch_pause: float = Field(default=0.1, ge=0)

    @property
    def broker_retention_seconds(self) -> int:
        return round(self.broker_retention_hours * 3600)


class MessagingSettings(BaseModel):
    transport: Literal["kafka", "sqs", "memory"] = "memory"
    namespace: str = Field(default="", pattern=r"^([a-z0-9][a-z0-9-]{0,30})?$")
    """Prefix of every topic and queue name, so that stacks can share a broker."""
    time_scale: float = Field(default=1.0, gt=0)
    """Multiplies retry delays; tests shrink them (0.01 turns 2 s into 20 ms)."""
    max_in_flight: int = Field(default=64, ge=1)
    handler_timeout: float = Field(default=120.0, gt=0)
    """Seconds a handler may take before it is cancelled and its message retried (unless
    its subscriber declares a timeout of its own): a hung call frees its key and slot."""
    drain_timeout: float = Field(default=30.0, ge=0)
    outcome_timeout: float = Field(default=60.0, gt=0)
    """How long a consumer keeps trying to write one outcome (retry, dead letter, ack)
    before it stops and the worker exits non-zero, to be restarted."""
    breaker: BreakerSettings = Field(default_factory=BreakerSettings)
    """The circuit breaker of each provider the subscribers name."""
    rate_limits: dict[str, float] = Field(default_factory=dict)
    """Calls a second this process makes to each provider it names (``{"smtp": 14}``);
    a provider without one is not limited. Divided among replicas, not shared: give each
    replica its share of the provider's quota (see :mod:`shop.messaging.rate_limit`)."""
    kafka: KafkaSettings = Field(default_factory=KafkaSettings)
    sqs: SqsSettings = Field(default_factory=SqsSettings)
    dead_letters: DeadLetterSettings = Field(default_factory=DeadLetterSettings)

    def unfit_for_production(self, prefix: str) -> list[str]:
        """What would make a deployed service lose or cross messages, each named by its
        variable (``prefix`` is the service's, e.g. ``SHOP_ORDER_MESSAGING__``). Empty when
        fit. The defaults suit one developer's machine and are refused in production."""
        problems = []
        if self.transport == "memory":
            problems.append(
                f"{prefix}TRANSPORT is memory, which keeps messages inside one process: "
                "set kafka or sqs"
            )
        if not self.namespace:
            problems.append(
                f"{prefix}NAMESPACE is empty: name the stack, so that stacks sharing a broker "
                "never read each other's messages"
            )
        if self.transport == "kafka":
            problems += self.kafka.unfit_for_production(f"{prefix}KAFKA__")
        return problems
