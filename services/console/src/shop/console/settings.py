"""The console's configuration, from ``SHOP_CONSOLE_*`` variables. What it reads (the
services' internal APIs, the broker, the captured e-mails) is configured as for ``shopctl``,
by the ``SHOP_OPS_*`` variables of :class:`shop.ops.settings.OpsSettings`."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Final, Self

from pydantic import Field, SecretStr, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from shop.console.domain.passwords import PasswordHash, parse_password_hash
from shop.contracts.asyncapi import DOCUMENT_DIR
from shop.messaging.settings import Environment, require_environment, unfit_secret

DEVELOPMENT_ADMIN_USER: Final = "admin"
DEVELOPMENT_ADMIN_PASSWORD: Final = "console-development-password"
DEVELOPMENT_ADMIN_PASSWORD_HASH: Final = (
    "$argon2id$v=19$m=19456,t=2,p=1$ZGV2ZWxvcG1lbnQtc2FsdA"
    "$8OMA4Z43yC6LwUD31t7VQOnW8D+tHv4EdoD4sPVq810"
)
"""The hash of :data:`DEVELOPMENT_ADMIN_PASSWORD`, so that a developer can log in at once."""
EARLIER_DEVELOPMENT_ADMIN_PASSWORD_HASH: Final = (
    "scrypt$16384$8$1$ZGV2ZWxvcG1lbnQtc2FsdA$E5-q3mMFztGJkJXR8pi18UHvi-4Bkgqp0Numwbotigc"
)
"""The same, in the scrypt format the console made before argon2id: refused in production
as well, for it may have been copied from an older example."""
DEVELOPMENT_SESSION_SECRET: Final = "development-only-session-secret-do-not-deploy"


class ConsoleSettings(BaseSettings):
    model_config = SettingsConfigDict(
        # A refused value is never echoed: it may be a secret.
        hide_input_in_errors=True,
        env_prefix="SHOP_CONSOLE_",
        env_nested_delimiter="__",
        extra="ignore",
    )

    environment: Environment
    """No default: every process says where it runs (``SHOP_CONSOLE_ENVIRONMENT``)."""
    host: str = "127.0.0.1"
    port: int = 8003
    admin_user: str = Field(default=DEVELOPMENT_ADMIN_USER, min_length=1)
    admin_password_hash: SecretStr = SecretStr(DEVELOPMENT_ADMIN_PASSWORD_HASH)
    """Made by ``python -m shop.console hash-password``."""
    session_secret: SecretStr = SecretStr(DEVELOPMENT_SESSION_SECRET)
    """Signs the session cookie: whoever knows it can forge a login."""
    session_max_age_seconds: int = Field(default=8 * 3600, ge=60)
    secure_cookie: bool = False
    """Send the session cookie over HTTPS only (required in production)."""
    asyncapi_dir: Path = DOCUMENT_DIR
    """The services' AsyncAPI documents, one ``<service>.json`` each: by default those the
    contracts library ships (:mod:`shop.contracts.asyncapi`)."""
    login_max_failures: int = Field(default=5, ge=1)
    """Failed logins one client address may make inside ``login_failure_window_seconds``,
    whatever user names it tries; the next try is refused (429) until the oldest of them is
    that old."""
    login_failure_window_seconds: float = Field(default=900.0, gt=0)
    login_concurrent_checks: int = Field(default=2, ge=1, le=16)
    """Password checks run at once, over every client (each holds about 19 MiB for
    argon2id's tens of milliseconds, 16 MiB for an earlier scrypt hash); a try that finds
    them all busy is refused (503, ``Retry-After``) rather than queued."""
    redrive_per_second: float = Field(default=5.0, gt=0)
    """The rate of a redrive of every matching dead letter."""
    log_json: bool = True

    @field_validator("admin_password_hash")
    @classmethod
    def readable_hash(cls, value: SecretStr) -> SecretStr:
        parse_password_hash(value.get_secret_value())
        return value

    @property
    def password_hash(self) -> PasswordHash:
        return parse_password_hash(self.admin_password_hash.get_secret_value())

    @property
    def shows_captured_mail(self) -> bool:
        """Captured e-mails exist in development only (a real provider keeps none)."""
        return self.environment == "development"

    @model_validator(mode="before")
    @classmethod
    def environment_given(cls, data: Any) -> Any:
        return require_environment(data, "SHOP_CONSOLE_ENVIRONMENT")

    @model_validator(mode="after")
    def fit_for_production(self) -> Self:
        """Refuse, at start-up, the development defaults that must not be deployed."""
        if self.environment != "production":
            return self
        problems = []
        weak_hash = unfit_secret(
            "SHOP_CONSOLE_ADMIN_PASSWORD_HASH",
            self.admin_password_hash,
            {DEVELOPMENT_ADMIN_PASSWORD_HASH, EARLIER_DEVELOPMENT_ADMIN_PASSWORD_HASH},
        )
        if weak_hash:
            problems.append(f"{weak_hash} (python -m shop.console hash-password)")
        weak_secret = unfit_secret(
            "SHOP_CONSOLE_SESSION_SECRET", self.session_secret, {DEVELOPMENT_SESSION_SECRET}
        )
        if weak_secret:
            problems.append(weak_secret)
        if not self.secure_cookie:
            problems.append(
                "SHOP_CONSOLE_SECURE_COOKIE must be true in production: the session "
                "cookie opens dead letters that hold customer data"
            )
        if problems:
            raise ValueError("; ".join(problems))
        return self
