"""order-service configuration, from ``SHOP_ORDER_*`` variables (nested with ``__``,
e.g. ``SHOP_ORDER_MESSAGING__TRANSPORT=kafka``)."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import timedelta
from typing import Any, Final, Literal, Self

from pydantic import Field, SecretStr, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from shop.database import DatabaseTimeouts
from shop.messaging import MessagingSettings, RelaySettings
from shop.messaging.internal import DEVELOPMENT_OPERATOR_TOKEN
from shop.messaging.retention import InboxRetentionSettings, at_least
from shop.messaging.settings import Environment, require_environment, unfit_secret, used_by
from shop.messaging.tracing import TracingSettings

DEVELOPMENT_JWT_SECRET = "development-only-secret-do-not-deploy"

OrderProcess = Literal["api", "worker", "migrate", "seed"]
"""order-service's processes: each entry point names its own to its settings."""
OrderPart = Literal["bus", "operator_token", "customer_tokens"]
"""What production judges of the settings, part by part."""

USES: Final[Mapping[OrderProcess, frozenset[OrderPart]]] = {
    # Checks the customers' tokens; publishes through the outbox, which the worker sends.
    "api": frozenset({"customer_tokens"}),
    # Consumes and relays on the bus; its internal API takes the operator's token.
    "worker": frozenset({"bus", "operator_token"}),
    # The database only.
    "migrate": frozenset(),
    "seed": frozenset(),
}
"""What each process uses, and so what production judges when it starts: a process is
never refused, nor handed, a secret it does not use."""


class OrderRetentionSettings(InboxRetentionSettings):
    """The inbox's retention, and the idempotency keys'."""

    idempotency_keys: timedelta = timedelta(days=7)
    """How long a checkout's ``Idempotency-Key`` is remembered: a retry with the key within
    it answers the first answer again; after it, the key is forgotten and would place a
    new order. A client that did not hear back retries at once (the frontend), or once it
    is online again (a phone that lost its network): a week covers a device left off over
    a long weekend. At least a day, the window most payment APIs promise (Stripe's), since
    a retry after a forgotten key is a second order, and a second charge."""

    @field_validator("idempotency_keys")
    @classmethod
    def keys_outlive_retries(cls, value: timedelta) -> timedelta:
        return at_least(
            value,
            timedelta(days=1),
            "a client may retry a checkout for a day, and a retry after its key is "
            "forgotten places a second order",
        )


class OrderSettings(BaseSettings):
    model_config = SettingsConfigDict(
        # A refused value is never echoed: it may be a secret.
        hide_input_in_errors=True,
        env_prefix="SHOP_ORDER_",
        env_nested_delimiter="__",
        extra="ignore",
    )

    environment: Environment
    """No default: every process says where it runs (``SHOP_ORDER_ENVIRONMENT``)."""
    process: OrderProcess | None = None
    """Which process reads these settings, named by its entry point (``OrderSettings(
    process="api")``, which wins over any variable): production judges only what it uses
    (:data:`USES`). Unnamed (a test, a tool), what any process uses."""
    database_url: str = "postgresql://postgres@127.0.0.1:5432/order"
    jwt_secret: SecretStr = SecretStr(DEVELOPMENT_JWT_SECRET)
    """HS256 key of the customers' bearer tokens."""
    jwt_issuer: str | None = None
    """The ``iss`` the tokens must carry: the identity provider's (required in production)."""
    jwt_audience: str | None = None
    """The ``aud`` the tokens must carry: this shop's (required in production)."""
    jwt_leeway_seconds: float = Field(default=30, ge=0, le=300)
    """How far the issuer's clock may be off ours when ``exp``, ``iat`` and ``nbf`` are checked."""
    host: str = "127.0.0.1"
    port: int = 8001
    worker_health_host: str = "127.0.0.1"
    """Where the worker's health port (``/healthz``, ``/readyz``, ``/metrics``) listens:
    loopback by default; ``0.0.0.0`` in a container, for the kubelet's probes and for
    Prometheus and the console to reach it."""
    worker_health_port: int = 9101
    operator_token: SecretStr | None = None
    """The bearer token of the operator routes on the worker's port (its internal API under
    ``/internal/v1``, which the console and ``shopctl`` read): required in production.
    Unset, those routes are open to whoever reaches the port, which only a developer's
    machine and the tests may allow."""
    max_body_bytes: int = Field(default=64 * 1024, ge=1024)
    db_pool_size: int = Field(default=10, ge=1)
    database_timeouts: DatabaseTimeouts = Field(default_factory=DatabaseTimeouts)
    """Lock, statement and idle-transaction timeouts of every connection the API, the
    worker and the relay open (``SHOP_ORDER_DATABASE_TIMEOUTS__LOCK_SECONDS`` …): a request
    that waits too long is answered 503 with ``Retry-After``, a handler's try is retried."""
    log_json: bool = True
    messaging: MessagingSettings = Field(default_factory=MessagingSettings)
    relay: RelaySettings = Field(default_factory=lambda: RelaySettings(name="order-service"))
    run_relay: bool = True
    """The relay runs in the worker by default; turn it off to run it as its own process."""
    retention: OrderRetentionSettings = Field(default_factory=OrderRetentionSettings)
    """How long the inbox and the idempotency keys keep their rows; the worker that holds
    the database's retention lock deletes them (``SHOP_ORDER_RETENTION__INBOX=P30D``)."""
    tracing: TracingSettings = Field(default_factory=TracingSettings)
    """Spans of the API and the worker (``SHOP_ORDER_TRACING__EXPORTER``: none, otlp, console,
    file)."""

    @model_validator(mode="before")
    @classmethod
    def environment_given(cls, data: Any) -> Any:
        return require_environment(data, "SHOP_ORDER_ENVIRONMENT")

    @model_validator(mode="after")
    def fit_for_production(self) -> Self:
        """Refuse, at start-up, the development defaults that must not be deployed, in the
        parts of the settings this process uses."""
        if self.environment != "production":
            return self
        used = used_by(USES, self.process)
        problems = []
        if "bus" in used:
            problems += self.messaging.unfit_for_production("SHOP_ORDER_MESSAGING__")
        if "operator_token" in used:
            weak_operator_token = unfit_secret(
                "SHOP_ORDER_OPERATOR_TOKEN", self.operator_token, {DEVELOPMENT_OPERATOR_TOKEN}
            )
            if weak_operator_token:
                problems.append(weak_operator_token)
        if "customer_tokens" in used:
            problems += self._customer_token_problems()
        if problems:
            raise ValueError("; ".join(problems))
        return self

    def _customer_token_problems(self) -> list[str]:
        problems = []
        weak = unfit_secret("SHOP_ORDER_JWT_SECRET", self.jwt_secret, {DEVELOPMENT_JWT_SECRET})
        if weak:
            problems.append(weak)
        if not self.jwt_issuer:
            problems.append("SHOP_ORDER_JWT_ISSUER must be set in production")
        if not self.jwt_audience:
            problems.append("SHOP_ORDER_JWT_AUDIENCE must be set in production")
        return problems
