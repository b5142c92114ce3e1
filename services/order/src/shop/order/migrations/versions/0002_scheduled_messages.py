"""scheduled messages in the outbox: due_at, and an index of its own for scheduled rows

Revision ID: 0002
Revises: 0001
Create Date: 2026-12-03 14:10:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0002"
down_revision: str | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("outbox", sa.Column("due_at", sa.DateTime(timezone=True), nullable=True))
    op.drop_index("ix_outbox_unsent", table_name="outbox")
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


def downgrade() -> None:
    op.drop_index("ix_outbox_scheduled", table_name="outbox")
    op.drop_index("ix_outbox_unsent", table_name="outbox")
    op.create_index(
        "ix_outbox_unsent", "outbox", ["id"], postgresql_where=sa.text("published_at IS NULL")
    )
    op.drop_column("outbox", "due_at")
