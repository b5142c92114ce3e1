"""payment-service configuration, from ``SHOP_PAYMENT_*`` variables (nested with ``__``,
e.g. ``SHOP_PAYMENT_MESSAGING__TRANSPORT=kafka``)."""

from __future__ import annotations

from typing import Literal, Self

from pydantic import Field, SecretStr, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from shop.messaging import MessagingSettings, RelaySettings
from shop.messaging.tracing import TracingSettings

DEVELOPMENT_WEBHOOK_SECRET = "whsec_development-only-do-not-deploy"
DEVELOPMENT_MIDTRANS_SERVER_KEY = "SB-Mid-server-development-only"


class PaymentSettings(BaseSettings):
    model_config = SettingsConfigDict(
        # A refused value is never echoed: it may be a secret.
        hide_input_in_errors=True,
        env_prefix="SHOP_PAYMENT_",
        env_nested_delimiter="__",
        extra="ignore",
    )

    environment: Literal["development", "test", "production"] = "development"
    database_url: str = "postgresql://postgres@127.0.0.1:5432/payment"
    webhook_secrets: list[SecretStr] = Field(
        default_factory=lambda: [SecretStr(DEVELOPMENT_WEBHOOK_SECRET)], min_length=1
    )
    """HMAC keys of the shop's own webhook format, all accepted: during a rotation the
    gateway signs with the new one while the old one is still listed (a JSON list)."""
    signature_tolerance_seconds: float = Field(default=300, gt=0)
    """How far a signature's time may be from now before it counts as a replay."""
    midtrans_server_key: SecretStr = SecretStr(DEVELOPMENT_MIDTRANS_SERVER_KEY)
    host: str = "127.0.0.1"
    port: int = 8002
    worker_health_host: str = "127.0.0.1"
    """Where the worker's health port (``/healthz``, ``/readyz``, ``/metrics``) listens:
    loopback by default; ``0.0.0.0`` in a container, for the kubelet's probes and for
    Prometheus and the console to reach it."""
    worker_health_port: int = 9102
    max_body_bytes: int = Field(default=64 * 1024, ge=1024)
    db_pool_size: int = Field(default=10, ge=1)
    log_json: bool = True
    messaging: MessagingSettings = Field(default_factory=MessagingSettings)
    relay: RelaySettings = Field(default_factory=lambda: RelaySettings(name="payment-service"))
    run_relay: bool = True
    """The relay runs in the worker by default; turn it off to run it as its own process."""
    tracing: TracingSettings = Field(default_factory=TracingSettings)
    """Spans of the API and the worker (``SHOP_PAYMENT_TRACING__EXPORTER``: none, otlp, console,
    file)."""

    @model_validator(mode="after")
    def fit_for_production(self) -> Self:
        """Refuse, at start-up, the development defaults that must not be deployed."""
        if self.environment != "production":
            return self
        problems = self.messaging.unfit_for_production("SHOP_PAYMENT_MESSAGING__")
        secrets = [secret.get_secret_value() for secret in self.webhook_secrets]
        if DEVELOPMENT_WEBHOOK_SECRET in secrets:
            problems.append("SHOP_PAYMENT_WEBHOOK_SECRETS must not list the development secret")
        if self.midtrans_server_key.get_secret_value() == DEVELOPMENT_MIDTRANS_SERVER_KEY:
            problems.append("SHOP_PAYMENT_MIDTRANS_SERVER_KEY must be set outside development")
        if problems:
            raise ValueError("; ".join(problems))
        return self
