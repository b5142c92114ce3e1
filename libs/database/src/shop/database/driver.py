"""A hot path's way to the driver: the asyncpg connection under one of SQLAlchemy's pooled
connections, for plain SQL in one pool and one connection budget."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import asyncpg
import asyncpg.exceptions._base as asyncpg_client
from sqlalchemy.exc import DBAPIError, EmulatedDBAPIException
from sqlalchemy.exc import TimeoutError as PoolTimeout
from sqlalchemy.ext.asyncio import AsyncEngine
from sqlalchemy.util import greenlet_spawn

CONNECTION_LOST = (
    asyncpg.PostgresConnectionError,
    asyncpg.InterfaceError,
    # What asyncpg says when a statement meets a connection the server has just closed.
    asyncpg.InternalClientError,
    # The server stopping (a restart, a failover) or still starting: not the statement.
    asyncpg.AdminShutdownError,
    asyncpg.CrashShutdownError,
    asyncpg.CannotConnectNowError,
    # The server ended a transaction left idle too long: the connection is closed with it.
    asyncpg.IdleInTransactionSessionTimeoutError,
    ConnectionError,
    TimeoutError,
)
"""What says the database connection is gone, not that a statement failed: the request
may be tried again once the database is back…"""
NOT_LOST = (
    asyncpg_client.DataError,
    asyncpg_client.ClientConfigurationError,
    asyncpg_client.UnsupportedClientFeatureError,
    asyncpg_client.UnsupportedServerFeatureError,
    asyncpg_client.OutdatedSchemaCacheError,
    asyncpg_client.ProtocolError,
)
"""…but for these, of the same classes: asyncpg refusing a value or a statement itself (a
number out of a column's range, a plan its cache has outlived). Tried again they fail
again, so they are the statement's failure."""
TIMED_OUT = (asyncpg.LockNotAvailableError, asyncpg.QueryCanceledError, PoolTimeout)
"""What a statement fails with when it waited longer than the connection's ``lock_timeout``
or ran longer than its ``statement_timeout`` (:mod:`shop.database.timeouts`): the
transaction is rolled back, and the same request may succeed a moment later. And what a
request fails with when every pooled connection stayed busy for ``pool_seconds`` (requests
piled up behind a lock): SQLAlchemy's own, not the driver's."""
DATABASE_FAILURES = (*CONNECTION_LOST, *TIMED_OUT, DBAPIError, EmulatedDBAPIException)
"""What a request may meet when the database fails it (for :func:`connection_lost` and
:func:`timed_out` to sort): SQLAlchemy's errors, the asyncpg dialect's own, which a raw
connection's checkout raises unwrapped (with asyncpg's error as its cause), and asyncpg's
timeouts, which a statement on the raw connection raises as they are."""


def connection_lost(error: BaseException) -> bool:
    """Whether ``error`` says the database could not be reached (down, restarting, the
    connection cut), rather than that a statement failed (a defect, or a bad request)."""
    if isinstance(error, DBAPIError):
        cause = error.orig.__cause__ if error.orig is not None else None
        return error.connection_invalidated or _lost(error.orig) or _lost(cause)
    if isinstance(error, EmulatedDBAPIException):
        return _lost(error.__cause__)
    return _lost(error)


def _lost(error: BaseException | None) -> bool:
    return isinstance(error, CONNECTION_LOST) and not isinstance(error, NOT_LOST)


def timed_out(error: BaseException) -> bool:
    """Whether ``error`` says a statement gave up on a lock or on its running time (the
    connection's timeouts), or a request on a pooled connection (every one busy): nothing
    is wrong with the request, it may be sent again."""
    if isinstance(error, DBAPIError):
        cause = error.orig.__cause__ if error.orig is not None else None
        return isinstance(cause, TIMED_OUT)
    if isinstance(error, EmulatedDBAPIException):
        return isinstance(error.__cause__, TIMED_OUT)
    return isinstance(error, TIMED_OUT)


def unavailable(error: BaseException) -> bool:
    """Whether ``error`` says the database is away (:func:`connection_lost`) or too slow
    for now (:func:`timed_out`): either way nothing is wrong with the work, which is to be
    tried again (a worker's outage, an internal route's 503), not failed."""
    return connection_lost(error) or timed_out(error)


@asynccontextmanager
async def driver_connection(engine: AsyncEngine) -> AsyncIterator[asyncpg.Connection]:
    """The asyncpg connection underneath one of ``engine``'s pooled connections, for a hot
    path in plain SQL; it goes back to the same pool (one pool, one connection budget).

    Taken from the pool itself, not through a SQLAlchemy ``Connection``: the checkout
    measured 8% less CPU that way (make bench-checkout)."""
    pooled = await engine.raw_connection()
    connection: asyncpg.Connection = pooled.driver_connection
    try:
        yield connection
    except BaseException as error:
        if connection.is_closed() or _lost(error):
            # SQLAlchemy never saw this error: tell its pool to open a new connection
            # instead of handing this dead one to the next request.
            await greenlet_spawn(pooled.invalidate, error)
        raise
    finally:
        # Giving it back may close it (an invalidated connection), which awaits inside
        # SQLAlchemy: run it where SQLAlchemy can.
        await greenlet_spawn(pooled.close)
