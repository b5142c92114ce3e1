"""Connections to each administered service's own database (read-only use), with the
failures said in one line: which service's database, where, and what to do."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Final

import asyncpg

from shop.messaging.relay import asyncpg_dsn
from shop.ops.errors import OpsError, Unreachable, redacted
from shop.ops.settings import OpsSettings

CONNECT_TIMEOUT: Final = 10.0


@asynccontextmanager
async def connected(settings: OpsSettings, service: str) -> AsyncIterator[asyncpg.Connection]:
    """A connection to ``service``'s own database, closed after the block."""
    url = settings.database_url(service)
    where = f"{service}'s database"
    try:
        connection = await asyncpg.connect(asyncpg_dsn(url), timeout=CONNECT_TIMEOUT)
    except (OSError, TimeoutError, asyncpg.CannotConnectNowError) as error:
        raise Unreachable(where, redacted(url)) from error
    except asyncpg.InvalidCatalogNameError as error:
        raise OpsError(f"{where} {redacted(url)} does not exist: has it been migrated?") from error
    except asyncpg.PostgresError as error:
        raise OpsError(f"{where} at {redacted(url)} refused the connection: {error}") from error
    try:
        yield connection
    except asyncpg.UndefinedTableError as error:
        raise OpsError(f"{where} {redacted(url)}: {error} (has it been migrated?)") from error
    finally:
        await connection.close()
