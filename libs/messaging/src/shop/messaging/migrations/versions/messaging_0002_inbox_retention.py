"""the inbox's retention: an index of its rows by the time they were handled

Revision ID: messaging_0002_inbox_retention
Revises: messaging_0001
Create Date: 2026-12-06 03:00:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "messaging_0002_inbox_retention"
down_revision: str | None = "messaging_0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # The cleanup reads the oldest rows first, a batch at a time: without the index, each
    # batch would scan the whole inbox. Not CONCURRENTLY: that needs the transaction to
    # end, and with it the migrations' advisory lock. The build holds off the inbox's
    # writes while it runs; where the inbox has grown large, build it by hand first
    # (CREATE INDEX CONCURRENTLY ix_inbox_processed_at ON inbox (processed_at)), and this
    # step finds it there.
    op.create_index("ix_inbox_processed_at", "inbox", ["processed_at"], if_not_exists=True)


def downgrade() -> None:
    op.drop_index("ix_inbox_processed_at", table_name="inbox")
