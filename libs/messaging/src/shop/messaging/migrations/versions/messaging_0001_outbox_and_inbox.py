"""the outbox (scheduled rows included) and the inbox

Revision ID: messaging_0001
Revises: (none)
Create Date: 2026-12-05 18:00:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import context, op
from sqlalchemy.dialects import postgresql

revision: str = "messaging_0001"
down_revision: str | None = None
branch_labels: str | Sequence[str] | None = ("messaging",)
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # A database its service migrated before the library had its own branch has both
    # tables already, made by the service's own revisions: they are kept, and an outbox
    # from before scheduled rows is brought up to date. (Offline, as SQL, there is no
    # database to look at: the script is for a new one.)
    existing = set() if context.is_offline_mode() else _tables()
    if "outbox" not in existing:
        _create_outbox()
    elif "due_at" not in _columns("outbox"):
        _schedule_rows()
    if "inbox" not in existing:
        op.create_table(
            "inbox",
            sa.Column("consumer", sa.String(length=200), nullable=False),
            sa.Column("event_id", sa.Uuid(), nullable=False),
            sa.Column("message_type", sa.String(length=100), nullable=False),
            sa.Column(
                "processed_at",
                sa.DateTime(timezone=True),
                server_default=sa.text("now()"),
                nullable=False,
            ),
            sa.PrimaryKeyConstraint("consumer", "event_id", name="pk_inbox"),
        )


def _tables() -> set[str]:
    return set(sa.inspect(op.get_bind()).get_table_names())


def _columns(table: str) -> set[str]:
    return {column["name"] for column in sa.inspect(op.get_bind()).get_columns(table)}


def _schedule_rows() -> None:
    """An outbox from before scheduled rows: ``due_at``, and an index for rows due now
    apart from one for scheduled rows."""
    op.add_column("outbox", sa.Column("due_at", sa.DateTime(timezone=True), nullable=True))
    op.drop_index("ix_outbox_unsent", table_name="outbox")
    _create_unsent_indexes()


def _create_unsent_indexes() -> None:
    """Rows to send now, and scheduled rows, each along an index of its own."""
    op.create_index(
        "ix_outbox_unsent",
        "outbox",
        ["id"],
        postgresql_where=sa.text("published_at IS NULL AND due_at IS NULL"),
    )
    op.create_index(
        "ix_outbox_scheduled",
        "outbox",
        ["due_at"],
        postgresql_where=sa.text("published_at IS NULL AND due_at IS NOT NULL"),
    )


def _create_outbox() -> None:
    op.create_table(
        "outbox",
        sa.Column("id", sa.BigInteger(), sa.Identity(always=True), nullable=False),
        sa.Column("event_id", sa.Uuid(), nullable=False),
        sa.Column("key", sa.String(length=200), nullable=False),
        sa.Column("message_type", sa.String(length=100), nullable=False),
        sa.Column("headers", postgresql.JSONB(astext_type=sa.Text()), nullable=False),
        sa.Column("body", sa.LargeBinary(), nullable=False),
        sa.Column(
            "created_at",
            sa.DateTime(timezone=True),
            server_default=sa.text("now()"),
            nullable=False,
        ),
        sa.Column("published_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("due_at", sa.DateTime(timezone=True), nullable=True),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("event_id"),
    )
    op.create_index(
        "ix_outbox_published_at",
        "outbox",
        ["published_at"],
        postgresql_where=sa.text("published_at IS NOT NULL"),
    )
    _create_unsent_indexes()


def downgrade() -> None:
    op.drop_table("outbox")
    op.drop_table("inbox")
