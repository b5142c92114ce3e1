"""The timeouts on real connections: an engine's and a DSN's (the relay's, the cleanups')
are opened with them, and a statement that runs into one fails with what
:func:`~shop.database.driver.timed_out` recognises, the lock held by another still held."""

from __future__ import annotations

import asyncpg
import pytest
from sqlalchemy import text
from sqlalchemy.exc import DBAPIError

from shop.database import DatabaseTimeouts, create_engine
from shop.database.driver import driver_connection, timed_out

SHORT = DatabaseTimeouts(lock_seconds=0.2, statement_seconds=0.5, idle_in_transaction_seconds=60)
"""Short, so that a test does not wait long for them to run out."""
_SHOW = (
    "SELECT current_setting('lock_timeout'), current_setting('statement_timeout'), "
    "current_setting('idle_in_transaction_session_timeout')"
)


async def test_every_connection_of_an_engine_has_the_timeouts(database_url: str) -> None:
    engine = create_engine(database_url, pool_size=2)
    try:
        async with engine.connect() as connection:
            assert tuple((await connection.execute(text(_SHOW))).one()) == ("2s", "15s", "5min")
    finally:
        await engine.dispose()


async def test_a_connection_opened_with_the_dsn_has_them_too(database_url: str) -> None:
    connection = await asyncpg.connect(SHORT.dsn(database_url))
    try:
        assert tuple(await connection.fetchrow(_SHOW)) == ("200ms", "500ms", "1min")
    finally:
        await connection.close()


async def test_a_statement_past_its_timeout_is_cancelled_as_timed_out(database_url: str) -> None:
    engine = create_engine(database_url, timeouts=SHORT)
    try:
        async with engine.connect() as connection:
            with pytest.raises(DBAPIError, match="statement timeout") as failed:
                await connection.execute(text("SELECT pg_sleep(5)"))
        assert timed_out(failed.value), repr(failed.value)
    finally:
        await engine.dispose()


async def test_a_lock_held_too_long_by_another_is_given_up_as_timed_out(database_url: str) -> None:
    holder = await asyncpg.connect(database_url)
    engine = create_engine(database_url, timeouts=SHORT)
    try:
        await holder.execute("CREATE TABLE stock (sku text PRIMARY KEY, left_ int)")
        await holder.execute("INSERT INTO stock VALUES ('SERUM-NIA-30', 3)")
        async with holder.transaction():
            await holder.execute("SELECT * FROM stock FOR UPDATE")
            async with engine.connect() as connection:
                with pytest.raises(DBAPIError, match="lock timeout") as through_sqlalchemy:
                    await connection.execute(text("SELECT * FROM stock FOR UPDATE"))
            async with driver_connection(engine) as raw:
                with pytest.raises(asyncpg.LockNotAvailableError) as on_the_driver:
                    await raw.fetch("SELECT * FROM stock FOR UPDATE")
        assert timed_out(through_sqlalchemy.value), repr(through_sqlalchemy.value)
        assert timed_out(on_the_driver.value)
    finally:
        await engine.dispose()
        await holder.close()
