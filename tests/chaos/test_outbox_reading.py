"""How the chaos suite reads an outbox's backlog off the real database: a scheduled row
that fell due a moment ago waits for the relay's next look (a second apart, longer on a
loaded machine), and is no backlog yet; one due longer than that is."""

from __future__ import annotations

import asyncio

import asyncpg

from .invariants import RELAY_GRACE, unsent

OUTBOX = """
CREATE TABLE outbox (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    created_at timestamptz NOT NULL DEFAULT now(),
    due_at timestamptz,
    published_at timestamptz
)"""


def test_a_row_due_a_moment_ago_is_no_backlog_yet_and_one_due_long_ago_is(
    database_url: str,
) -> None:
    async def read() -> tuple[int, int]:
        connection = await asyncpg.connect(database_url)
        try:
            await connection.execute(OUTBOX)
            await connection.execute(
                "INSERT INTO outbox (due_at, published_at) VALUES"
                " (now() - interval '1 second', NULL),"  # fell due just now
                " (now() - $1 * interval '1 second', NULL),"  # due long ago: a backlog
                " (now() + interval '1 minute', NULL),"  # not due yet
                " (NULL, now())",  # sent
                RELAY_GRACE + 5,
            )
            return await unsent(connection), await unsent(connection, due_for=RELAY_GRACE)
        finally:
            await connection.close()

    assert asyncio.run(read()) == (2, 1)
