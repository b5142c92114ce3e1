"""The record of e-mails sent on real Postgres: one row per e-mail, a reversal notice per
reversal, held by the database's own key and checks, and the migration that brought the
reversal notices to a table of order e-mails."""

from __future__ import annotations

import asyncio
import uuid

import asyncpg
import pytest
from alembic import command

from shop.database import create_engine, session_factory
from shop.notification.adapters.sent_log import SqlSentLog
from shop.notification.domain.kinds import NotificationKey, NotificationKind
from shop.notification.migrations import MIGRATIONS, migrate_async

REVERSAL = NotificationKind.PAYMENT_REVERSAL
INSERT = (
    "INSERT INTO order_notifications (order_id, kind, reference, recipient, message_id, event_id)"
    " VALUES ($1, $2, $3, 'ayu@example.com', '<m@shop.example>', $4)"
)


async def marked(sent_log: SqlSentLog, key: NotificationKey) -> bool:
    return await sent_log.mark_sent(
        key, recipient="ayu@example.com", message_id="<m@shop.example>", event_id=uuid.uuid4()
    )


async def test_each_reversal_of_an_order_is_recorded_once_beside_its_order_emails(
    database_url: str,
) -> None:
    await migrate_async(database_url)
    engine = create_engine(database_url)
    sent_log = SqlSentLog(session_factory(engine))
    order_id = uuid.uuid4()
    receipt = NotificationKey(order_id, NotificationKind.PAYMENT_RECEIPT)
    first = NotificationKey(order_id, REVERSAL, "RF-1")
    second = NotificationKey(order_id, REVERSAL, "RF-2")
    try:
        assert [await marked(sent_log, key) for key in (receipt, first, second)] == [True] * 3
        assert [await marked(sent_log, key) for key in (receipt, first, second)] == [False] * 3
        assert await sent_log.already_sent(second)
        assert not await sent_log.already_sent(NotificationKey(order_id, REVERSAL, "RF-3"))
    finally:
        await engine.dispose()


async def test_the_database_refuses_a_reversal_notice_without_its_reversal_and_the_converse(
    database_url: str,
) -> None:
    await migrate_async(database_url)
    connection = await asyncpg.connect(database_url)
    try:
        for kind, reference in (("payment_reversal", ""), ("order_confirmation", "RF-1")):
            with pytest.raises(asyncpg.CheckViolationError, match="reference_per_reversal"):
                await connection.execute(INSERT, uuid.uuid4(), kind, reference, uuid.uuid4())
        # The kinds are the code's: a new e-mail needs no migration (0003).
        await connection.execute(INSERT, uuid.uuid4(), "newsletter", "", uuid.uuid4())
    finally:
        await connection.close()


async def test_the_emails_recorded_before_the_migration_stay_recorded_and_it_goes_back(
    database_url: str,
) -> None:
    await migrate_async(database_url, "0001")
    order_id = uuid.uuid4()
    connection = await asyncpg.connect(database_url)
    try:
        await connection.execute(
            "INSERT INTO order_notifications (order_id, kind, recipient, message_id, event_id)"
            " VALUES ($1, 'payment_receipt', 'ayu@example.com', '<m@shop.example>', $2)",
            order_id,
            uuid.uuid4(),
        )
        await migrate_async(database_url)
        engine = create_engine(database_url)
        sent_log = SqlSentLog(session_factory(engine))
        try:
            receipt = NotificationKey(order_id, NotificationKind.PAYMENT_RECEIPT)
            assert await sent_log.already_sent(receipt)
            assert not await marked(sent_log, receipt)
            assert await marked(sent_log, NotificationKey(order_id, REVERSAL, "RF-1"))
        finally:
            await engine.dispose()

        await asyncio.to_thread(command.downgrade, MIGRATIONS.config(database_url), "0001")

        rows = await connection.fetch("SELECT order_id, kind FROM order_notifications")
        assert [(row["order_id"], row["kind"]) for row in rows] == [(order_id, "payment_receipt")]
    finally:
        await connection.close()


async def test_going_back_before_0003_keeps_the_record_of_an_email_of_a_newer_kind(
    database_url: str,
) -> None:
    await migrate_async(database_url)
    connection = await asyncpg.connect(database_url)
    try:
        await connection.execute(INSERT, uuid.uuid4(), "shipping_notice", "", uuid.uuid4())
        await asyncio.to_thread(command.downgrade, MIGRATIONS.config(database_url), "0002")
        assert await connection.fetchval("SELECT count(*) FROM order_notifications") == 1
        # New rows are checked against 0002's kinds again.
        with pytest.raises(asyncpg.CheckViolationError, match="kind_known"):
            await connection.execute(INSERT, uuid.uuid4(), "newsletter", "", uuid.uuid4())
    finally:
        await connection.close()
