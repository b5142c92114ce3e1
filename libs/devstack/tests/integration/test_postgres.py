import asyncio
from pathlib import Path

import asyncpg
import psutil

from shop.devstack import PostgresServer
from shop.devstack.postgres import EmbeddedPostgres


async def test_a_sql_round_trip(database_url: str):
    connection = await asyncpg.connect(database_url)
    try:
        await connection.execute("CREATE TABLE product (sku text PRIMARY KEY, stock int NOT NULL)")
        await connection.execute("INSERT INTO product VALUES ($1, $2)", "SERUM-NIA-30", 12)

        stock = await connection.fetchval(
            "SELECT stock FROM product WHERE sku = $1", "SERUM-NIA-30"
        )
        version = await connection.fetchval("SHOW server_version_num")
    finally:
        await connection.close()

    assert stock == 12
    assert int(version) >= 150000


async def test_each_test_gets_a_fresh_database_that_is_dropped_after(
    postgres_server: PostgresServer,
):
    name = await postgres_server.create_database(prefix="scratch")
    admin = await asyncpg.connect(postgres_server.url())
    try:
        assert (
            await admin.fetchval("SELECT count(*) FROM pg_database WHERE datname = $1", name) == 1
        )
        holder = await asyncpg.connect(postgres_server.url(name))  # still connected when dropped
        await postgres_server.drop_database(name)
        assert (
            await admin.fetchval("SELECT count(*) FROM pg_database WHERE datname = $1", name) == 0
        )
        assert holder.is_closed() or not await _alive(holder)
    finally:
        await admin.close()


async def _alive(connection: asyncpg.Connection) -> bool:
    try:
        await connection.fetchval("SELECT 1")
    except (asyncpg.PostgresError, asyncpg.InterfaceError, OSError):
        return False
    return True


def test_a_postgres_whose_fast_shutdown_hangs_is_ended_whole_and_starts_again(tmp_path: Path):
    # Its shutdown checkpoint never ends (the checkpointer is stopped): killing the postmaster
    # alone would leave its children holding the shared memory, and no new server could start.
    postgres = EmbeddedPostgres(tmp_path / "pg")
    postgres.start()
    try:
        server = psutil.Process(postgres.process.pid)
        [checkpointer] = [p for p in server.children() if "checkpointer" in " ".join(p.cmdline())]
        checkpointer.suspend()
        children = server.children()
        assert postgres.shut_down(within=1) is False
        assert not [child.pid for child in children if _alive_process(child)]
        postgres.start()  # the same data and port
        assert asyncio.run(_answers(postgres.server)) == 1
    finally:
        postgres.stop()


def _alive_process(process: psutil.Process) -> bool:
    try:
        return process.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


async def _answers(server: PostgresServer) -> int:
    connection = await asyncpg.connect(server.url())
    try:
        return int(await connection.fetchval("SELECT 1"))
    finally:
        await connection.close()
