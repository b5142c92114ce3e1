"""What says the database is away (answered 503, tried again) and what says a statement
failed (a defect, a 500): a restart's errors are of the first kind, from the moment the
server stops to the moment it accepts connections again."""

from __future__ import annotations

import asyncpg
import asyncpg.exceptions._base as asyncpg_client
import pytest
from sqlalchemy.dialects.postgresql.asyncpg import AsyncAdapt_asyncpg_dbapi
from sqlalchemy.exc import DBAPIError, IntegrityError

from shop.database.driver import DATABASE_FAILURES, connection_lost


@pytest.mark.parametrize(
    "error",
    [
        ConnectionRefusedError(111, "Connection refused"),
        asyncpg.AdminShutdownError("terminating connection due to administrator command"),
        asyncpg.CrashShutdownError("terminating connection because of crash"),
        asyncpg.CannotConnectNowError("the database system is starting up"),
        asyncpg.InterfaceError("connection is closed"),
        TimeoutError(),
    ],
    ids=type,
)
def test_a_database_stopping_or_starting_is_away(error: Exception) -> None:
    assert connection_lost(error)
    assert connection_lost(DBAPIError("SELECT 1", {}, error))


@pytest.mark.parametrize(
    "error",
    [
        asyncpg.QueryCanceledError("canceling statement due to statement timeout"),
        asyncpg.UniqueViolationError("duplicate key value"),
        # asyncpg's own check of a value it is given: an InterfaceError by its class.
        asyncpg_client.DataError("invalid input for query argument $1: 70000 (out of int16 range)"),
        asyncpg_client.OutdatedSchemaCacheError("cached statement plan is invalid"),
        ValueError("a bug"),
    ],
    ids=type,
)
def test_a_failed_statement_is_not(error: Exception) -> None:
    assert not connection_lost(error)
    assert not connection_lost(IntegrityError("INSERT", {}, error))


def test_the_drivers_own_error_over_a_restart_is_away_too() -> None:
    # What a raw connection taken while the server starts up raises: the dialect's adapted
    # error, not wrapped by SQLAlchemy, with asyncpg's as its cause.
    adapted = AsyncAdapt_asyncpg_dbapi.Error("the database system is starting up")
    adapted.__cause__ = asyncpg.CannotConnectNowError("the database system is starting up")
    assert isinstance(adapted, DATABASE_FAILURES)
    assert connection_lost(adapted)
    failed = AsyncAdapt_asyncpg_dbapi.Error("duplicate key value")
    failed.__cause__ = asyncpg.UniqueViolationError("duplicate key value")
    assert not connection_lost(failed)
    refused = AsyncAdapt_asyncpg_dbapi.Error("invalid input for query argument $1")
    refused.__cause__ = asyncpg_client.DataError("invalid input for query argument $1")
    assert not connection_lost(refused)
    assert not connection_lost(DBAPIError("INSERT", {}, refused))
