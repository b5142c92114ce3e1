"""The timeouts every connection is opened with, and how a statement that ran into one is
told from a database that is away (both are answered 503, each with its own reason)."""

from __future__ import annotations

import asyncpg
import pytest
from pydantic import ValidationError
from sqlalchemy.dialects.postgresql.asyncpg import AsyncAdapt_asyncpg_dbapi
from sqlalchemy.exc import DBAPIError, OperationalError
from sqlalchemy.exc import TimeoutError as PoolTimeout

from shop.database import DatabaseTimeouts
from shop.database.driver import DATABASE_FAILURES, connection_lost, timed_out


def test_the_defaults_wait_two_seconds_for_a_lock_and_fifteen_for_a_statement() -> None:
    assert DatabaseTimeouts().server_settings() == {
        "lock_timeout": "2000",
        "statement_timeout": "15000",
        "idle_in_transaction_session_timeout": "300000",
    }


def test_zero_turns_a_timeout_off() -> None:
    off = DatabaseTimeouts(lock_seconds=0, statement_seconds=0, idle_in_transaction_seconds=0)
    assert set(off.server_settings().values()) == {"0"}


def test_a_lock_wait_longer_than_any_statement_is_refused() -> None:
    with pytest.raises(ValidationError, match="lock_seconds"):
        DatabaseTimeouts(lock_seconds=20, statement_seconds=15)


def test_the_dsn_carries_the_timeouts_beside_what_the_url_says_already() -> None:
    timeouts = DatabaseTimeouts(lock_seconds=0.5)
    dsn = timeouts.dsn("postgresql://shop@db:5432/order?sslmode=require&lock_timeout=100")
    assert dsn == (
        "postgresql://shop@db:5432/order?sslmode=require&lock_timeout=100"
        "&statement_timeout=15000&idle_in_transaction_session_timeout=300000"
    )


def _adapted(error: Exception) -> AsyncAdapt_asyncpg_dbapi.Error:
    """The asyncpg dialect's error for ``error``, as SQLAlchemy's pool raises it."""
    adapted = AsyncAdapt_asyncpg_dbapi.Error(str(error))
    adapted.__cause__ = error
    return adapted


@pytest.mark.parametrize(
    "error",
    [
        asyncpg.LockNotAvailableError("canceling statement due to lock timeout"),
        asyncpg.QueryCanceledError("canceling statement due to statement timeout"),
    ],
    ids=type,
)
def test_a_statement_that_gave_up_waiting_timed_out_and_the_database_is_not_away(
    error: Exception,
) -> None:
    # On the checkout's raw connection, as asyncpg raises it; through SQLAlchemy, wrapped.
    assert isinstance(error, DATABASE_FAILURES)
    assert timed_out(error)
    wrapped = OperationalError("SELECT … FOR UPDATE", {}, _adapted(error))
    assert timed_out(wrapped)
    assert timed_out(_adapted(error))
    assert not connection_lost(error)
    assert not connection_lost(wrapped)


@pytest.mark.parametrize(
    "error",
    [
        asyncpg.UniqueViolationError("duplicate key value"),
        asyncpg.AdminShutdownError("terminating connection due to administrator command"),
        ValueError("a bug"),
    ],
    ids=type,
)
def test_other_failures_did_not_time_out(error: Exception) -> None:
    assert not timed_out(error)
    assert not timed_out(DBAPIError("SELECT 1", {}, _adapted(error)))


def test_a_request_that_waited_too_long_for_a_pooled_connection_timed_out() -> None:
    waited = PoolTimeout("QueuePool limit of size 1 overflow 0 reached, connection timed out")
    assert isinstance(waited, DATABASE_FAILURES)
    assert timed_out(waited)
    assert not connection_lost(waited)
    assert DatabaseTimeouts().pool_seconds == 3.0
    assert "pool" not in str(DatabaseTimeouts().server_settings())


def test_a_transaction_ended_for_idling_lost_its_connection() -> None:
    ended = asyncpg.IdleInTransactionSessionTimeoutError(
        "terminating connection due to idle-in-transaction timeout"
    )
    assert connection_lost(ended)
    assert connection_lost(DBAPIError("SELECT 1", {}, _adapted(ended)))
