"""Where the dev/test infrastructure comes from: started here, or already running elsewhere."""

from __future__ import annotations

from pathlib import Path

from pydantic_settings import BaseSettings, SettingsConfigDict


class DevstackSettings(BaseSettings):
    """Read from ``SHOP_DEVSTACK_*`` variables. Each URL left unset means "start one here"."""

    model_config = SettingsConfigDict(env_prefix="SHOP_DEVSTACK_", extra="ignore")

    postgres_url: str | None = None
    """An existing server, e.g. ``postgresql://postgres@127.0.0.1:5432/postgres``; the
    tests create (and drop) their own databases in it."""
    kafka_bootstrap: str | None = None
    """An existing Kafka cluster's bootstrap servers, e.g. ``127.0.0.1:9092``."""
    aws_endpoint: str | None = None
    """An existing SQS/SNS endpoint URL (LocalStack, say)."""
    aws_region: str = "ap-southeast-3"
    workdir: Path | None = None
    """Where embedded servers keep their data and logs; a fresh temporary folder if unset."""
    startup_timeout: float = 60.0
