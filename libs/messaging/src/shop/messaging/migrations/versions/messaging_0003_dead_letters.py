"""dead letters kept in the service's own database

Revision ID: messaging_0003_dead_letters
Revises: messaging_0002_inbox_retention
Create Date: 2026-12-06 03:00:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import context, op
from sqlalchemy.dialects import postgresql

revision: str = "messaging_0003_dead_letters"
down_revision: str | None = "messaging_0002_inbox_retention"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # A database made by the library's ``create_tables`` (its tests) has the table already.
    if not context.is_offline_mode() and "dead_letters" in _tables():
        return
    op.create_table(
        "dead_letters",
        sa.Column("id", sa.BigInteger(), sa.Identity(always=True), nullable=False),
        sa.Column("consumer", sa.String(length=200), nullable=False),
        sa.Column("transport_id", sa.String(length=200), nullable=False),
        sa.Column("source", sa.Text(), nullable=False),
        sa.Column("message_type", sa.Text(), nullable=True),
        sa.Column("key", sa.Text(), nullable=True),
        sa.Column("error_type", sa.Text(), nullable=False),
        sa.Column("error_message", sa.Text(), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("first_failure_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("last_failure_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("whole_body_size", sa.BigInteger(), nullable=True),
        sa.Column("headers", postgresql.JSONB(astext_type=sa.Text()), nullable=False),
        sa.Column("body", sa.LargeBinary(), nullable=False),
        sa.Column(
            "problems",
            postgresql.ARRAY(sa.Text()),
            server_default=sa.text("'{}'"),
            nullable=False,
        ),
        sa.Column(
            "stored_at",
            sa.DateTime(timezone=True),
            server_default=sa.text("now()"),
            nullable=False,
        ),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint(
            "consumer", "transport_id", name="uq_dead_letters_consumer_transport_id"
        ),
    )
    op.create_index("ix_dead_letters_consumer_id", "dead_letters", ["consumer", "id"])
    op.create_index("ix_dead_letters_stored_at", "dead_letters", ["stored_at"])


def _tables() -> set[str]:
    return set(sa.inspect(op.get_bind()).get_table_names())


def downgrade() -> None:
    op.drop_table("dead_letters")
