"""Where the running shop is, from ``SHOP_OPS_*`` variables (nested with ``__``, e.g.
``SHOP_OPS_MESSAGING__TRANSPORT=sqs``) and from the env file ``make run`` writes
(``SHOP_OPS_ENV_FILE``, ``.devstack/shop.env`` by default), the variables winning.

The services are read through their internal APIs (each worker's ``/internal/v1``, with
the operator token), never through their databases: no database URL is configured here.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Final, Self

from pydantic import Field, SecretStr, field_validator, model_validator
from pydantic_settings import (
    BaseSettings,
    DotEnvSettingsSource,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
)

from shop.messaging import MessagingSettings
from shop.messaging.settings import Environment, require_environment, unfit_secret

# The development defaults of order-service and payment-service (their settings'
# DEVELOPMENT_* constants), spelled out here so that operating the shop installs none of
# its services; a test holds them equal to the services' own.
ORDER_DEVELOPMENT_JWT_SECRET: Final = "development-only-secret-do-not-deploy"
"""The development default of order-service's ``SHOP_ORDER_JWT_SECRET``."""
PAYMENT_DEVELOPMENT_WEBHOOK_SECRET: Final = "whsec_development-only-do-not-deploy"
"""The development default of payment-service's ``SHOP_PAYMENT_WEBHOOK_SECRETS``."""
PAYMENT_DEVELOPMENT_MIDTRANS_SERVER_KEY: Final = "SB-Mid-server-development-only"
"""The development default of payment-service's ``SHOP_PAYMENT_MIDTRANS_SERVER_KEY``."""

ENV_FILE_VARIABLE: Final = "SHOP_OPS_ENV_FILE"
DEFAULT_ENV_FILE: Final = Path(".devstack/shop.env")

ORDER_SERVICE: Final = "order-service"
PAYMENT_SERVICE: Final = "payment-service"
NOTIFICATION_SERVICE: Final = "notification-service"


def env_file() -> Path:
    """The env file the settings read: ``SHOP_OPS_ENV_FILE``, else ``.devstack/shop.env``."""
    return Path(os.environ.get(ENV_FILE_VARIABLE) or DEFAULT_ENV_FILE)


class OpsSettings(BaseSettings):
    model_config = SettingsConfigDict(
        # A refused value is never echoed: it may be a secret.
        hide_input_in_errors=True,
        env_prefix="SHOP_OPS_",
        env_nested_delimiter="__",
        extra="ignore",
    )

    environment: Environment
    """No default: the console and ``shopctl`` say where they run (``SHOP_OPS_ENVIRONMENT``;
    ``make run`` writes ``development`` into its env file)."""
    order_api_url: str = "http://127.0.0.1:8001"
    payment_api_url: str = "http://127.0.0.1:8002"
    console_url: str = "http://127.0.0.1:8003"
    order_worker_url: str = "http://127.0.0.1:9101"
    payment_worker_url: str = "http://127.0.0.1:9102"
    notification_worker_url: str = "http://127.0.0.1:9103"
    operator_token: SecretStr | None = None
    """The bearer token of the services' internal APIs (each worker's ``/internal/v1``):
    the one every service's ``SHOP_<SERVICE>_OPERATOR_TOKEN`` holds. None where the
    services ask for none (development)."""
    gateway_url: str | None = None
    """The development payment gateway (``shopctl pay`` and ``shopctl demo`` pay orders
    there; ``make run`` writes it into its env file). None where there is none: a real
    gateway is paid by real customers."""
    messaging: MessagingSettings = Field(
        default_factory=lambda: MessagingSettings(transport="kafka")
    )
    """The bus the services run on (``make run``: Kafka, no namespace)."""
    jwt_secret: SecretStr = SecretStr(ORDER_DEVELOPMENT_JWT_SECRET)
    """order-service's key for customer tokens (its ``SHOP_ORDER_JWT_SECRET``)."""
    jwt_issuer: str | None = None
    """order-service's ``SHOP_ORDER_JWT_ISSUER``, when it checks one: the ``iss`` of the
    tokens ``shopctl token`` issues."""
    jwt_audience: str | None = None
    """order-service's ``SHOP_ORDER_JWT_AUDIENCE``, when it checks one: the ``aud`` of the
    tokens ``shopctl token`` issues."""
    payment_webhook_secret: SecretStr = SecretStr(PAYMENT_DEVELOPMENT_WEBHOOK_SECRET)
    """What the gateway signs the shop's webhook format with (one of payment-service's
    ``SHOP_PAYMENT_WEBHOOK_SECRETS``)."""
    midtrans_server_key: SecretStr = SecretStr(PAYMENT_DEVELOPMENT_MIDTRANS_SERVER_KEY)
    """payment-service's ``SHOP_PAYMENT_MIDTRANS_SERVER_KEY``."""
    mail_dir: Path | None = None
    """The development SMTP sink's folder of captured ``.eml`` files."""
    trace_dir: Path | None = None
    """The folder the shop's processes write their spans to (the ``file`` exporter), from
    which an order's timeline adds its failed tries and the console shows its traces."""

    @field_validator("messaging", mode="before")
    @classmethod
    def kafka_unless_told(cls, value: Any) -> Any:
        """The shop's bus is Kafka unless the transport is named: a bootstrap address given
        alone must not fall back to the library's default (memory)."""
        if isinstance(value, dict) and "transport" not in value:
            return {**value, "transport": "kafka"}
        return value

    @model_validator(mode="before")
    @classmethod
    def environment_given(cls, data: Any) -> Any:
        return require_environment(data, "SHOP_OPS_ENVIRONMENT")

    @model_validator(mode="after")
    def fit_for_production(self) -> Self:
        """Refuse, at start-up, a weak secret given in production. The secrets here only
        act as the identity provider and the gateway do in development (``shopctl token``,
        ``shopctl pay``): the console needs none of them, so one left unset keeps its
        development value, which every service refuses in production."""
        if self.environment != "production":
            return self
        secrets = {
            "jwt_secret": ("SHOP_OPS_JWT_SECRET", ORDER_DEVELOPMENT_JWT_SECRET),
            "payment_webhook_secret": (
                "SHOP_OPS_PAYMENT_WEBHOOK_SECRET",
                PAYMENT_DEVELOPMENT_WEBHOOK_SECRET,
            ),
            "midtrans_server_key": (
                "SHOP_OPS_MIDTRANS_SERVER_KEY",
                PAYMENT_DEVELOPMENT_MIDTRANS_SERVER_KEY,
            ),
        }
        problems = [
            problem
            for field, (variable, development) in secrets.items()
            if field in self.model_fields_set
            and (problem := unfit_secret(variable, getattr(self, field), {development}))
        ]
        if problems:
            raise ValueError("; ".join(problems))
        return self

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        # The env file is named by a variable of its own, read when the settings are made.
        return (
            init_settings,
            env_settings,
            DotEnvSettingsSource(settings_cls, env_file=env_file()),
            file_secret_settings,
        )

    def worker_url(self, service: str) -> str:
        """The port of ``service``'s worker: its health (``/metrics``, ``/readyz``) and its
        internal API (``/internal/v1``)."""
        urls = {
            ORDER_SERVICE: self.order_worker_url,
            PAYMENT_SERVICE: self.payment_worker_url,
            NOTIFICATION_SERVICE: self.notification_worker_url,
        }
        return _known(urls, service, "worker")


def _known(urls: dict[str, str], service: str, what: str) -> str:
    try:
        return urls[service]
    except KeyError:
        raise KeyError(f"no {what} is configured for {service!r}") from None
