"""Engines and sessions: SQLAlchemy 2 async on asyncpg."""

from __future__ import annotations

from sqlalchemy import event
from sqlalchemy.engine.interfaces import DBAPIConnection
from sqlalchemy.exc import InvalidatePoolError
from sqlalchemy.ext.asyncio import (
    AsyncEngine,
    AsyncSession,
    async_sessionmaker,
    create_async_engine,
)
from sqlalchemy.pool import ConnectionPoolEntry, PoolProxiedConnection

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
    engine = create_async_engine(
        sqlalchemy_url(url),
        pool_size=pool_size,
        max_overflow=0,
        pool_timeout=timeouts.pool_seconds,
        connect_args={"server_settings": timeouts.server_settings()},
    )
    event.listen(engine.sync_engine, "checkout", _refuse_a_connection_the_server_closed)
    return engine


def _refuse_a_connection_the_server_closed(
    _: DBAPIConnection, record: ConnectionPoolEntry, __: PoolProxiedConnection
) -> None:
    """A pooled connection whose server closed it while it waited in the pool (Postgres
    restarted, failed over, or an administrator ended it) is not handed out: the pool opens
    a new one in its place, and replaces those opened before it as they are next taken
    (what ``InvalidatePoolError`` asks of it: one connection closed by the server says the
    others opened with it may be too). Otherwise each dead connection would fail one
    request after the database is back, however long after.

    The driver saw the server close the socket, so this asks it without a round trip, where
    SQLAlchemy's ``pool_pre_ping`` would add one to every checkout. A connection cut without
    a word (a network partition) is still found by the statement that meets it."""
    connection = record.driver_connection
    if connection is not None and connection.is_closed():
        raise InvalidatePoolError("the database server closed this pooled connection")


def session_factory(engine: AsyncEngine) -> async_sessionmaker[AsyncSession]:
    return async_sessionmaker(engine, expire_on_commit=False)
