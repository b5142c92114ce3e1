"""Engines and sessions: SQLAlchemy 2 async on asyncpg."""

from __future__ import annotations

from sqlalchemy.ext.asyncio import (
    AsyncEngine,
    AsyncSession,
    async_sessionmaker,
    create_async_engine,
)

from shop.database.timeouts import DatabaseTimeouts


def sqlalchemy_url(url: str) -> str:
    """``postgresql://…`` (what people and tools pass around) as SQLAlchemy's asyncpg URL."""
    scheme, _, rest = url.partition("://")
    return f"postgresql+asyncpg://{rest}" if scheme in {"postgres", "postgresql"} else url


def create_engine(
    url: str, *, pool_size: int = 5, timeouts: DatabaseTimeouts | None = None
) -> AsyncEngine:
    """An engine whose every connection has ``timeouts`` (the defaults when None)."""
    timeouts = timeouts or DatabaseTimeouts()
    # pool_size is the cap: more connections than that only queue inside Postgres.
    return create_async_engine(
        sqlalchemy_url(url),
        pool_size=pool_size,
        max_overflow=0,
        pool_timeout=timeouts.pool_seconds,
        connect_args={"server_settings": timeouts.server_settings()},
    )


def session_factory(engine: AsyncEngine) -> async_sessionmaker[AsyncSession]:
    return async_sessionmaker(engine, expire_on_commit=False)
