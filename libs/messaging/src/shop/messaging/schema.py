"""The outbox, inbox and dead-letter tables, as SQLAlchemy definitions: created and changed by the
library's own migration branch (:mod:`shop.messaging.migrations`), which must match them."""

from __future__ import annotations

from sqlalchemy import (
    BigInteger,
    Column,
    DateTime,
    Identity,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    PrimaryKeyConstraint,
    String,
    Table,
    Text,
    UniqueConstraint,
    Uuid,
    func,
    text,
)
from sqlalchemy.dialects.postgresql import ARRAY, JSONB
from sqlalchemy.ext.asyncio import AsyncConnection

metadata = MetaData()

OUTBOX_CHANNEL = "shop_outbox"
"""``NOTIFY`` channel the writer signals on commit and the relay listens to."""

outbox = Table(
    "outbox",
    metadata,
    # Identity order is commit order closely enough for one key: a key's rows are written
    # by transactions that lock the same aggregate, so they commit in id order.
    Column("id", BigInteger, Identity(always=True), primary_key=True),
    Column("event_id", Uuid, nullable=False, unique=True),
    Column("key", String(200), nullable=False),
    # The relay maps the type to its transport's topic name.
    Column("message_type", String(100), nullable=False),
    Column("headers", JSONB, nullable=False),
    Column("body", LargeBinary, nullable=False),
    Column("created_at", DateTime(timezone=True), nullable=False, server_default=func.now()),
    Column("published_at", DateTime(timezone=True)),
    # A scheduled message: the relay publishes it once this time has come, not before.
    Column("due_at", DateTime(timezone=True)),
    # The relay reads unsent rows, oldest first, and scheduled ones as they fall due; sent
    # rows wait for the retention cleanup. Two indexes, so that a mass of scheduled rows
    # never lies in the way of the rows to send now.
    Index(
        "ix_outbox_unsent", "id", postgresql_where=text("published_at IS NULL AND due_at IS NULL")
    ),
    Index(
        "ix_outbox_scheduled",
        "due_at",
        postgresql_where=text("published_at IS NULL AND due_at IS NOT NULL"),
    ),
    Index(
        "ix_outbox_published_at", "published_at", postgresql_where=text("published_at IS NOT NULL")
    ),
)

inbox = Table(
    "inbox",
    metadata,
    Column("consumer", String(200), nullable=False),
    Column("event_id", Uuid, nullable=False),
    Column("message_type", String(100), nullable=False),
    Column("processed_at", DateTime(timezone=True), nullable=False, server_default=func.now()),
    PrimaryKeyConstraint("consumer", "event_id", name="pk_inbox"),
    # The retention cleanup deletes the oldest rows first, along this index.
    Index("ix_inbox_processed_at", "processed_at"),
)

dead_letters = Table(
    "dead_letters",
    metadata,
    # Identity order is the order letters were taken in: the listing's keyset cursor.
    Column("id", BigInteger, Identity(always=True), primary_key=True),
    Column("consumer", String(200), nullable=False),
    # Its id on the broker that carried it: collecting it twice keeps it once.
    Column("transport_id", String(200), nullable=False),
    Column("source", Text, nullable=False),
    Column("message_type", Text),
    Column("key", Text),
    Column("error_type", Text, nullable=False),
    Column("error_message", Text, nullable=False),
    Column("attempts", Integer, nullable=False),
    Column("first_failure_at", DateTime(timezone=True), nullable=False),
    Column("last_failure_at", DateTime(timezone=True), nullable=False),
    Column("whole_body_size", BigInteger),
    Column("headers", JSONB, nullable=False),
    Column("body", LargeBinary, nullable=False),
    # What could not be read of its dead-letter keys: shown beside it, never hiding it.
    Column("problems", ARRAY(Text), nullable=False, server_default=text("'{}'")),
    Column("stored_at", DateTime(timezone=True), nullable=False, server_default=func.now()),
    UniqueConstraint("consumer", "transport_id", name="uq_dead_letters_consumer_transport_id"),
    # A consumer's letters in order (listing pages); all of them by age (retention).
    Index("ix_dead_letters_consumer_id", "consumer", "id"),
    Index("ix_dead_letters_stored_at", "stored_at"),
)


async def create_tables(connection: AsyncConnection) -> None:
    """Create the outbox, inbox and dead letters where they are missing (the library's own tests and
    benchmarks; services run :mod:`shop.messaging.migrations`)."""
    await connection.run_sync(metadata.create_all)
