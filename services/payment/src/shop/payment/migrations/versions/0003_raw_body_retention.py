"""raw bodies' retention: a processed notification's raw body may be cleared (NULL), and
an index of the bodies kept, by the time their notification was processed

Revision ID: 0003
Revises: 0002
Create Date: 2026-12-06 03:00:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0003"
down_revision: str | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.alter_column("payment_events", "raw_body", existing_type=sa.LargeBinary(), nullable=True)
    # The cleanup clears the oldest processed bodies first, a batch at a time; a cleared
    # row leaves the index, so each round reads only bodies still kept. Not CONCURRENTLY:
    # that needs the transaction to end, and with it the migrations' advisory lock. The
    # build holds off the notifications' writes while it runs; where the table has grown
    # large, build it by hand first (CREATE INDEX CONCURRENTLY ix_payment_events_raw_body_kept
    # ON payment_events (processed_at) WHERE raw_body IS NOT NULL), and this step finds it.
    op.create_index(
        "ix_payment_events_raw_body_kept",
        "payment_events",
        ["processed_at"],
        postgresql_where=sa.text("raw_body IS NOT NULL"),
        if_not_exists=True,
    )


def downgrade() -> None:
    op.drop_index("ix_payment_events_raw_body_kept", table_name="payment_events")
    # A body cleared is gone: an empty one stands in for it.
    op.execute("UPDATE payment_events SET raw_body = '' WHERE raw_body IS NULL")
    op.alter_column("payment_events", "raw_body", existing_type=sa.LargeBinary(), nullable=False)
