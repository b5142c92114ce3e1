"""A pool whose connections the server closed (a restart, a failover, an administrator)
hands out none of them again: each request after the database is back gets a live
connection, however long ago the restart was, instead of one request per dead connection
failing (answered 503) the next time it is used."""

from __future__ import annotations

import asyncio
import time

import asyncpg
from sqlalchemy import text

from shop.database import create_engine
from shop.database.driver import driver_connection

POOL_SIZE = 3


async def _open_every_pooled_connection(engine: object) -> list[asyncpg.Connection]:
    """Each of the pool's connections, opened and given back."""
    opened: list[asyncpg.Connection] = []
    ready = asyncio.Event()

    async def hold() -> None:
        async with driver_connection(engine) as connection:  # type: ignore[arg-type]
            opened.append(connection)
            if len(opened) == POOL_SIZE:
                ready.set()
            await ready.wait()

    await asyncio.gather(*(hold() for _ in range(POOL_SIZE)))
    return opened


async def _closed_by_the_server(database_url: str, connections: list[asyncpg.Connection]) -> None:
    """Their backends terminated, as a restart does, and the client told (its socket read)."""
    admin = await asyncpg.connect(database_url)
    try:
        pids = [connection.get_server_pid() for connection in connections]
        await admin.execute("SELECT pg_terminate_backend(pid) FROM unnest($1::int[]) AS pid", pids)
    finally:
        await admin.close()
    deadline = time.monotonic() + 5
    while not all(connection.is_closed() for connection in connections):
        assert time.monotonic() < deadline, "the client never saw the server close them"
        await asyncio.sleep(0.01)


async def test_no_request_meets_a_connection_the_server_closed(database_url: str) -> None:
    engine = create_engine(database_url, pool_size=POOL_SIZE)
    try:
        await _closed_by_the_server(database_url, await _open_every_pooled_connection(engine))
        for _ in range(POOL_SIZE):
            async with driver_connection(engine) as connection:
                assert await connection.fetchval("SELECT 1") == 1
    finally:
        await engine.dispose()


async def test_nor_a_session_through_sqlalchemy(database_url: str) -> None:
    engine = create_engine(database_url, pool_size=POOL_SIZE)
    try:
        await _closed_by_the_server(database_url, await _open_every_pooled_connection(engine))
        for _ in range(POOL_SIZE):
            async with engine.connect() as connection:
                assert (await connection.execute(text("SELECT 1"))).scalar() == 1
    finally:
        await engine.dispose()
