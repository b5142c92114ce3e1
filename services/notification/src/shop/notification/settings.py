"""notification-service configuration, from ``SHOP_NOTIFICATION_*`` variables (nested with
``__``, e.g. ``SHOP_NOTIFICATION_SMTP__HOST=smtp.example.com``)."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import timedelta
from email.utils import parseaddr
from typing import Any, Final, Literal, Self

from pydantic import BaseModel, Field, FilePath, SecretStr, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from shop.database import DatabaseTimeouts
from shop.messaging import MessagingSettings
from shop.messaging.internal import DEVELOPMENT_OPERATOR_TOKEN
from shop.messaging.retention import LONGEST_REDELIVERY, RetentionSettings, at_least
from shop.messaging.settings import Environment, require_environment, unfit_secret, used_by
from shop.messaging.tracing import TracingSettings

NotificationProcess = Literal["worker", "migrate"]
"""notification-service's processes: each entry point names its own to its settings."""
NotificationPart = Literal["bus", "operator_token", "sending"]
"""What production judges of the settings, part by part."""

USES: Final[Mapping[NotificationProcess, frozenset[NotificationPart]]] = {
    # Consumes on the bus and sends the e-mails; its internal API takes the operator's token.
    "worker": frozenset({"bus", "operator_token", "sending"}),
    # The database only.
    "migrate": frozenset(),
}
"""What each process uses, and so what production judges when it starts: a process is
never refused, nor handed, a secret it does not use."""


class SmtpSettings(BaseModel):
    """The provider's SMTP relay (in development, the devstack's SMTP sink)."""

    host: str = "127.0.0.1"
    port: int = Field(default=1025, ge=1, le=65535)
    security: Literal["none", "starttls", "tls"] = "none"
    """``tls``: TLS from the first byte (port 465); ``starttls``: upgrade after connecting
    (port 587); ``none``: plain, for a local sink only."""
    username: str | None = None
    password: SecretStr | None = None
    ca_file: FilePath | None = None
    """CA certificates to trust for TLS, beside the system's (a relay with a private CA)."""
    timeout: float = Field(default=15.0, gt=0)
    """Per SMTP command: a provider slower than this counts as unavailable (retried)."""
    sender: str = "Skincare Shop <orders@skincare-shop.example>"
    """The From header; its domain also names the Message-IDs."""

    @model_validator(mode="after")
    def usable(self) -> Self:
        # Refused at start-up, not found out one failed e-mail at a time.
        if (self.username is None) != (self.password is None):
            raise ValueError("set both username and password for the SMTP login, or neither")
        local, _, domain = parseaddr(self.sender)[1].rpartition("@")
        if not local or "." not in domain:
            raise ValueError(f"sender {self.sender!r} needs an address like name@example.com")
        return self


class FaultSettings(BaseModel):
    """A slow and unreliable provider on purpose, for demos and tests of the retries."""

    enabled: bool = False
    min_latency: float = Field(default=0.3, ge=0)
    max_latency: float = Field(default=3.0, ge=0)
    failure_rate: float = Field(default=0.0, ge=0, le=1)
    """Share of sends that fail as a provider outage would (before anything is sent)."""
    seed: int | None = None
    """Makes the latencies and failures repeatable."""

    @model_validator(mode="after")
    def latency_range(self) -> Self:
        if self.max_latency < self.min_latency:
            raise ValueError("max_latency must be at least min_latency")
        return self


class ShopSettings(BaseModel):
    """Who the e-mails and invoices come from."""

    name: str = "Skincare Shop"
    address: str = "Jl. Kemang Raya 12, Jakarta Selatan 12730, Indonesia"
    support_email: str = "help@skincare-shop.example"
    website: str = "https://skincare-shop.example"


class NotificationRetentionSettings(RetentionSettings):
    """The sent e-mails' marks' retention (the service keeps no inbox: each e-mail is its
    own record)."""

    sent_emails: timedelta = timedelta(days=30)
    """How long the mark of a sent e-mail (``order_notifications``) is kept. The mark is
    what keeps a redelivered event from sending its e-mail again, so it must outlive the
    longest time a message can come back (retries, dead letters redriven later): at least
    :data:`~shop.messaging.retention.LONGEST_REDELIVERY`. The operators' view of an
    order's e-mails shows those of this period."""

    @field_validator("sent_emails")
    @classmethod
    def marks_outlive_redeliveries(cls, value: timedelta) -> timedelta:
        return at_least(
            value,
            LONGEST_REDELIVERY,
            "a sent e-mail's mark must outlive the longest time a message can come back "
            "(retries, dead letters redriven later), or the redelivery sends it again",
        )


class NotificationSettings(BaseSettings):
    model_config = SettingsConfigDict(
        # A refused value is never echoed: it may be a secret.
        hide_input_in_errors=True,
        env_prefix="SHOP_NOTIFICATION_",
        env_nested_delimiter="__",
        extra="ignore",
    )

    environment: Environment
    """No default: every process says where it runs (``SHOP_NOTIFICATION_ENVIRONMENT``)."""
    process: NotificationProcess | None = None
    """Which process reads these settings, named by its entry point (``NotificationSettings(
    process="worker")``, which wins over any variable): production judges only what it
    uses (:data:`USES`). Unnamed (a test, a tool), what any process uses."""
    database_url: str = "postgresql://postgres@127.0.0.1:5432/notification"
    smtp: SmtpSettings = Field(default_factory=SmtpSettings)
    faults: FaultSettings = Field(default_factory=FaultSettings)
    shop: ShopSettings = Field(default_factory=ShopSettings)
    max_attempts: int = Field(default=8, ge=1)
    """Sends of one e-mail before it is dead-lettered: with backoff from 2 s doubling
    (2 + 4 + … + 128 s), eight attempts ride out a provider outage of about four minutes."""
    max_in_flight: int = Field(default=32, ge=1)
    """E-mails being sent at once (sending is mostly waiting on the provider); also the
    consumer's limit of messages taken in, whatever ``messaging.max_in_flight`` says, and the
    database connections the worker holds (one per send, for its hold)."""
    database_timeouts: DatabaseTimeouts = Field(default_factory=DatabaseTimeouts)
    """Lock, statement and idle-transaction timeouts of the worker's connections
    (``SHOP_NOTIFICATION_DATABASE_TIMEOUTS__LOCK_SECONDS`` …): a handler's try that waits too
    long is retried. The idle one must outlast an e-mail's send, which runs inside the
    hold's transaction: it is checked against ``messaging.handler_timeout``."""
    worker_health_host: str = "127.0.0.1"
    """Where the worker's health port (``/healthz``, ``/readyz``, ``/metrics``) listens:
    loopback by default; ``0.0.0.0`` in a container, for the kubelet's probes and for
    Prometheus and the console to reach it."""
    worker_health_port: int = 9103
    operator_token: SecretStr | None = None
    """The bearer token of the operator routes on the worker's port (its internal API under
    ``/internal/v1``, which the console and ``shopctl`` read): required in production.
    Unset, those routes are open to whoever reaches the port, which only a developer's
    machine and the tests may allow."""
    log_json: bool = True
    messaging: MessagingSettings = Field(default_factory=MessagingSettings)
    retention: NotificationRetentionSettings = Field(default_factory=NotificationRetentionSettings)
    """How long the sent e-mails' marks are kept; the worker that holds the database's
    retention lock deletes them
    (``SHOP_NOTIFICATION_RETENTION__SENT_EMAILS=P30D``)."""
    tracing: TracingSettings = Field(default_factory=TracingSettings)
    """Spans of the worker (``SHOP_NOTIFICATION_TRACING__EXPORTER``: none, otlp, console, file)."""

    @model_validator(mode="before")
    @classmethod
    def environment_given(cls, data: Any) -> Any:
        return require_environment(data, "SHOP_NOTIFICATION_ENVIRONMENT")

    @model_validator(mode="after")
    def hold_outlasts_a_send(self) -> Self:
        """A hold's transaction cut by the idle timeout mid-send would lose the mark of an
        e-mail already sent: the retry sends it again."""
        idle = self.database_timeouts.idle_in_transaction_seconds
        if idle and idle <= self.messaging.handler_timeout:
            raise ValueError(
                "SHOP_NOTIFICATION_DATABASE_TIMEOUTS__IDLE_IN_TRANSACTION_SECONDS must exceed "
                f"the handlers' timeout ({self.messaging.handler_timeout:g} s): an e-mail is "
                "sent inside its hold's transaction"
            )
        return self

    @model_validator(mode="after")
    def fit_for_production(self) -> Self:
        """Refuse, at start-up, the development defaults that must not be deployed, in the
        parts of the settings this process uses."""
        if self.environment != "production":
            return self
        used = used_by(USES, self.process)
        problems = []
        if "bus" in used:
            problems += self.messaging.unfit_for_production("SHOP_NOTIFICATION_MESSAGING__")
        if "operator_token" in used:
            weak_operator_token = unfit_secret(
                "SHOP_NOTIFICATION_OPERATOR_TOKEN",
                self.operator_token,
                {DEVELOPMENT_OPERATOR_TOKEN},
            )
            if weak_operator_token:
                problems.append(weak_operator_token)
        if "sending" in used and self.faults.enabled:
            problems.append("fault injection (SHOP_NOTIFICATION_FAULTS__ENABLED) is for demos")
        if problems:
            raise ValueError("; ".join(problems))
        return self
