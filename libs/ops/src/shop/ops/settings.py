"""Where the running shop is, from ``SHOP_OPS_*`` variables (nested with ``__``, e.g.
``SHOP_OPS_MESSAGING__TRANSPORT=sqs``) and from the env file ``make run`` writes
(``SHOP_OPS_ENV_FILE``, ``.devstack/shop.env`` by default; a program may name one,
``OpsSettings(_env_file=path)``, where ``None`` means the default), the variables winning.

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
from shop.messaging.internal import DEVELOPMENT_OPERATOR_TOKEN
from shop.messaging.settings import Environment, require_environment, unfit_secret
from shop.simulators.identity import DEVELOPMENT_SIGNING_KEY

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
    jwt_secret: SecretStr = SecretStr(DEVELOPMENT_SIGNING_KEY)
    """The key ``shopctl token``, ``order`` and ``demo`` sign customer tokens with, acting as
    the development identity provider (:mod:`shop.simulators.identity`, whose development key
    is the default): the one order-service checks them with."""
    jwt_issuer: str | None = None
    """order-service's ``SHOP_ORDER_JWT_ISSUER``, when it checks one: the ``iss`` of the
    tokens ``shopctl token`` issues."""
    jwt_audience: str | None = None
    """order-service's ``SHOP_ORDER_JWT_AUDIENCE``, when it checks one: the ``aud`` of the
    tokens ``shopctl token`` issues."""
    mail_dir: Path | None = None
    """The development SMTP sink's folder of captured ``.eml`` files."""
    tracing_url: str | None = None
    """The tracing backend's query API (Jaeger's HTTP API, e.g. ``http://jaeger-query:16686``;
    ``make run`` serves the same over its span files and writes its address into its env
    file), from which an order's timeline adds its failed tries and the console shows its
    traces. None where there is none: the timeline and the console then show no spans."""

    @field_validator("tracing_url", mode="before")
    @classmethod
    def empty_is_unset(cls, value: Any) -> Any:
        """An empty URL is none: compose and a ConfigMap pass a variable left blank as ""."""
        return None if isinstance(value, str) and not value.strip() else value

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
        """Refuse, at start-up, a weak secret given in production. The signing key only acts
        as the development identity provider does (``shopctl token``): the console needs
        none, so one left unset keeps the development key, which order-service refuses in
        production. No secret of any service is held here: the services' internal APIs take
        the operator token, and the development gateway signs its own notifications."""
        if self.environment != "production":
            return self
        secrets = {
            "jwt_secret": ("SHOP_OPS_JWT_SECRET", DEVELOPMENT_SIGNING_KEY),
        }
        problems = [
            problem
            for field, (variable, development) in secrets.items()
            if field in self.model_fields_set
            and (problem := unfit_secret(variable, getattr(self, field), {development}))
        ]
        if self.operator_token is not None and (
            weak := unfit_secret(
                "SHOP_OPS_OPERATOR_TOKEN", self.operator_token, {DEVELOPMENT_OPERATOR_TOKEN}
            )
        ):
            problems.append(weak)
        if self.messaging.transport == "kafka":
            # The lag reader is a client of the bus like any service: no login, no TLS, no go.
            problems += self.messaging.kafka.unfit_for_production("SHOP_OPS_MESSAGING__KAFKA__")
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
        # The env file is the one given (``OpsSettings(_env_file=...)``), else the one named by
        # a variable of its own, read when the settings are made.
        given = isinstance(dotenv_settings, DotEnvSettingsSource) and dotenv_settings.env_file
        return (
            init_settings,
            env_settings,
            dotenv_settings if given else DotEnvSettingsSource(settings_cls, env_file=env_file()),
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
