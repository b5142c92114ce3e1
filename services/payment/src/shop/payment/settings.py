"""payment-service configuration, from ``SHOP_PAYMENT_*`` variables (nested with ``__``,
e.g. ``SHOP_PAYMENT_MESSAGING__TRANSPORT=kafka``)."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import timedelta
from typing import Any, Final, Literal, Self
from urllib.parse import urlsplit

from pydantic import Field, SecretStr, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from shop.database import DatabaseTimeouts
from shop.messaging import MessagingSettings, RelaySettings
from shop.messaging.internal import DEVELOPMENT_OPERATOR_TOKEN
from shop.messaging.retention import InboxRetentionSettings, at_least
from shop.messaging.settings import Environment, require_environment, unfit_secret, used_by
from shop.messaging.tracing import TracingSettings

DEVELOPMENT_WEBHOOK_SECRET = "whsec_development-only-do-not-deploy"
DEVELOPMENT_MIDTRANS_SERVER_KEY = "SB-Mid-server-development-only"
DEVELOPMENT_SHOP_GATEWAY_API_KEY = "gwkey_development-only-do-not-deploy"
MIDTRANS_SANDBOX_KEY_PREFIX: Final = "SB-Mid-"
"""Midtrans' sandbox keys start so: a sandbox moves no money."""
MIDTRANS_SANDBOX_API_HOST: Final = "sandbox.midtrans.com"

Gateway = Literal["shop", "midtrans"]
"""A payment gateway whose notifications the service takes: ``shop`` (the shop's own
webhook format) or ``midtrans``."""
GATEWAYS: Final[tuple[Gateway, ...]] = ("shop", "midtrans")

PaymentProcess = Literal["api", "worker", "migrate"]
"""payment-service's processes: each entry point names its own to its settings."""
PaymentPart = Literal["bus", "operator_token", "gateways", "webhooks", "gateway_apis"]
"""What production judges of the settings, part by part: ``webhooks`` the keys the
gateways' notifications are checked with, ``gateway_apis`` those the gateways' APIs are
called with."""

USES: Final[Mapping[PaymentProcess, frozenset[PaymentPart]]] = {
    # Takes the gateways' notifications, checking their signatures; publishes through the
    # outbox, which the worker sends.
    "api": frozenset({"gateways", "webhooks"}),
    # Consumes and relays on the bus; calls the gateways' status and refund APIs; its
    # internal API takes the operator's token.
    "worker": frozenset({"bus", "operator_token", "gateways", "gateway_apis"}),
    # The database only.
    "migrate": frozenset(),
}
"""What each process uses, and so what production judges when it starts: a process is
never refused, nor handed, a secret it does not use."""


class PaymentRetentionSettings(InboxRetentionSettings):
    """The inbox's retention, and the gateways' raw notification bodies'."""

    raw_bodies: timedelta = timedelta(days=30)
    """How long a processed notification keeps its raw body (``payment_events.raw_body``,
    the bytes its signature was computed over), the bulk of the row and the part that may
    name the customer. Nothing reads it: it is evidence, for a person looking into a
    payment, and is cleared (NULL) after this. The row itself is kept for ever, as long as
    money needs it: it is the record of what each gateway said of each payment (amount,
    ids, outcome), and its unique gateway event id refuses an old notification replayed.
    A notification not processed yet keeps its body, and so does every notification of a
    flagged payment, until a person has cleared the flag. At least the reconciliation's
    lookback (``reconcile_lookback_seconds``): a payment the reconciler may still question
    keeps the bodies a person would compare."""


class PaymentSettings(BaseSettings):
    model_config = SettingsConfigDict(
        # A refused value is never echoed: it may be a secret.
        hide_input_in_errors=True,
        env_prefix="SHOP_PAYMENT_",
        env_nested_delimiter="__",
        extra="ignore",
    )

    environment: Environment
    """No default: every process says where it runs (``SHOP_PAYMENT_ENVIRONMENT``)."""
    process: PaymentProcess | None = None
    """Which process reads these settings, named by its entry point (``PaymentSettings(
    process="api")``, which wins over any variable): production judges only what it uses
    (:data:`USES`). Unnamed (a test, a tool), what any process uses."""
    database_url: str = "postgresql://postgres@127.0.0.1:5432/payment"
    gateways: list[Gateway] = Field(default_factory=lambda: list(GATEWAYS), min_length=1)
    """The gateways this shop takes payments through (a JSON list): only their webhook
    routes are served, and only their secrets are required. Both by default; production
    names its own."""
    webhook_secrets: list[SecretStr] = Field(
        default_factory=lambda: [SecretStr(DEVELOPMENT_WEBHOOK_SECRET)]
    )
    """HMAC keys of the shop's own webhook format, all accepted: during a rotation the
    gateway signs with the new one while the old one is still listed (a JSON list)."""
    signature_tolerance_seconds: float = Field(default=300, gt=0)
    """How far a signature's time may be from now before it counts as a replay."""
    midtrans_server_key: SecretStr = SecretStr(DEVELOPMENT_MIDTRANS_SERVER_KEY)
    """Midtrans' server key: checks its notifications' signatures and calls its API."""
    midtrans_api_url: str = "https://api.sandbox.midtrans.com"
    """Midtrans' Core API (status, refunds); production's is ``https://api.midtrans.com``."""
    shop_gateway_api_url: str = "http://127.0.0.1:8004"
    """The shop-format gateway's API (a payment's status, refunds)."""
    shop_gateway_api_key: SecretStr = SecretStr(DEVELOPMENT_SHOP_GATEWAY_API_KEY)
    """The key this service calls the shop-format gateway's API with."""
    gateway_timeout_seconds: float = Field(default=10, gt=0)
    """How long one call to a gateway's API may take before it counts as failed."""
    payment_window_seconds: float = Field(default=1800, gt=0)
    """An order not paid this long after its checkout expires."""
    expiry_grace_seconds: float = Field(default=60, ge=0)
    """How long past the window a pending payment waits for notifications in flight before
    it expires."""
    reconcile_interval_seconds: float = Field(default=300, gt=0)
    """How often the worker holds its payments against the gateways' records."""
    reconcile_lookback_seconds: float = Field(default=7 * 24 * 3600, gt=0)
    """How far back a reconciliation looks for payments to check."""
    reconcile_settling_seconds: float = Field(default=60, ge=0)
    """A payment opened, or a charge settled, this recently is left out of a reconciliation:
    its notification may still be on the way."""
    host: str = "127.0.0.1"
    port: int = 8002
    worker_health_host: str = "127.0.0.1"
    """Where the worker's health port (``/healthz``, ``/readyz``, ``/metrics``) listens:
    loopback by default; ``0.0.0.0`` in a container, for the kubelet's probes and for
    Prometheus and the console to reach it."""
    worker_health_port: int = 9102
    operator_token: SecretStr | None = None
    """The bearer token of the operator routes on the worker's port (its internal API under
    ``/internal/v1``, which the console and ``shopctl`` read): required in production.
    Unset, those routes are open to whoever reaches the port, which only a developer's
    machine and the tests may allow."""
    max_body_bytes: int = Field(default=64 * 1024, ge=1024)
    db_pool_size: int = Field(default=10, ge=1)
    database_timeouts: DatabaseTimeouts = Field(default_factory=DatabaseTimeouts)
    """Lock, statement and idle-transaction timeouts of every connection the API, the
    worker and the relay open (``SHOP_PAYMENT_DATABASE_TIMEOUTS__LOCK_SECONDS`` …): a request
    that waits too long is answered 503 with ``Retry-After``, a handler's try is retried."""
    log_json: bool = True
    messaging: MessagingSettings = Field(default_factory=MessagingSettings)
    relay: RelaySettings = Field(default_factory=lambda: RelaySettings(name="payment-service"))
    run_relay: bool = True
    """The relay runs in the worker by default; turn it off to run it as its own process."""
    retention: PaymentRetentionSettings = Field(default_factory=PaymentRetentionSettings)
    """How long the inbox keeps its rows and a processed notification its raw body; the
    worker that holds the database's retention lock cleans them
    (``SHOP_PAYMENT_RETENTION__RAW_BODIES=P30D``)."""
    tracing: TracingSettings = Field(default_factory=TracingSettings)
    """Spans of the API and the worker (``SHOP_PAYMENT_TRACING__EXPORTER``: none, otlp, console,
    file)."""

    @model_validator(mode="before")
    @classmethod
    def environment_given(cls, data: Any) -> Any:
        return require_environment(data, "SHOP_PAYMENT_ENVIRONMENT")

    @model_validator(mode="after")
    def shop_format_has_a_secret(self) -> Self:
        # Anywhere: with no key, every notification of the shop's format would be refused.
        if "shop" in self.gateways and not self.webhook_secrets:
            raise ValueError("SHOP_PAYMENT_WEBHOOK_SECRETS must list at least one secret")
        return self

    @model_validator(mode="after")
    def raw_bodies_outlive_reconciliation(self) -> Self:
        try:
            at_least(
                self.retention.raw_bodies,
                timedelta(seconds=self.reconcile_lookback_seconds),
                "a payment the reconciliation may still question keeps its notifications' "
                "raw bodies (SHOP_PAYMENT_RECONCILE_LOOKBACK_SECONDS)",
            )
        except ValueError as error:
            raise ValueError(f"SHOP_PAYMENT_RETENTION__RAW_BODIES {error}") from None
        return self

    @model_validator(mode="after")
    def fit_for_production(self) -> Self:
        """Refuse, at start-up, the development defaults that must not be deployed, in the
        parts of the settings this process uses; a gateway that is off needs none of its
        settings."""
        if self.environment != "production":
            return self
        used = used_by(USES, self.process)
        problems = []
        if "bus" in used:
            problems += self.messaging.unfit_for_production("SHOP_PAYMENT_MESSAGING__")
        if "operator_token" in used:
            weak_operator_token = unfit_secret(
                "SHOP_PAYMENT_OPERATOR_TOKEN", self.operator_token, {DEVELOPMENT_OPERATOR_TOKEN}
            )
            if weak_operator_token:
                problems.append(weak_operator_token)
        if "gateways" in used and "gateways" not in self.model_fields_set:
            problems.append(
                'SHOP_PAYMENT_GATEWAYS must be set in production (a JSON list: "shop", "midtrans")'
            )
        if "webhooks" in used:
            problems += self._webhook_problems()
        if "gateway_apis" in used:
            problems += self._gateway_api_problems()
        if problems:
            # Midtrans' server key serves both its notifications and its API: named once.
            raise ValueError("; ".join(dict.fromkeys(problems)))
        return self

    def _webhook_problems(self) -> list[str]:
        problems = []
        if "shop" in self.gateways:
            # Each entry by its place in the list: the refusal shows which, never what.
            problems += [
                unfit_secret(
                    f"SHOP_PAYMENT_WEBHOOK_SECRETS[{i}]", secret, {DEVELOPMENT_WEBHOOK_SECRET}
                )
                for i, secret in enumerate(self.webhook_secrets)
            ]
        if "midtrans" in self.gateways:
            problems.append(self._midtrans_key_problem())
        return [problem for problem in problems if problem]

    def _gateway_api_problems(self) -> list[str]:
        problems = []
        if "shop" in self.gateways:
            problems.append(
                unfit_secret(
                    "SHOP_PAYMENT_SHOP_GATEWAY_API_KEY",
                    self.shop_gateway_api_key,
                    {DEVELOPMENT_SHOP_GATEWAY_API_KEY},
                )
            )
        if "midtrans" in self.gateways:
            problems.append(self._midtrans_key_problem())
            problems += self._midtrans_api_problems()
        return [problem for problem in problems if problem]

    def _midtrans_key_problem(self) -> str | None:
        key = self.midtrans_server_key
        weak = unfit_secret(
            "SHOP_PAYMENT_MIDTRANS_SERVER_KEY", key, {DEVELOPMENT_MIDTRANS_SERVER_KEY}
        )
        if weak:
            return weak
        if key.get_secret_value().startswith(MIDTRANS_SANDBOX_KEY_PREFIX):
            return (
                f"SHOP_PAYMENT_MIDTRANS_SERVER_KEY is a sandbox key "
                f"({MIDTRANS_SANDBOX_KEY_PREFIX}…): production takes the production key"
            )
        return None

    def _midtrans_api_problems(self) -> list[str]:
        problems = []
        url = urlsplit(self.midtrans_api_url)
        if url.scheme != "https":
            problems.append("SHOP_PAYMENT_MIDTRANS_API_URL must be an https:// URL")
        if MIDTRANS_SANDBOX_API_HOST in (url.hostname or ""):
            problems.append(
                "SHOP_PAYMENT_MIDTRANS_API_URL is Midtrans' sandbox: production calls "
                "https://api.midtrans.com"
            )
        return problems
