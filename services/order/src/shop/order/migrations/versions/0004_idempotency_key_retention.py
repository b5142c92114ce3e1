"""idempotency keys' retention: an index of the keys by the time they were claimed

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-06 03:00:00
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "0004"
down_revision: str | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # The cleanup deletes the oldest keys first, a batch at a time, along this index. Not
    # CONCURRENTLY: that needs the transaction to end, and with it the migrations' advisory
    # lock. The build holds off the checkouts' writes while it runs; where the table has
    # grown large, build it by hand first (CREATE INDEX CONCURRENTLY
    # ix_idempotency_keys_created_at ON idempotency_keys (created_at)), and this step finds
    # it there.
    op.create_index(
        op.f("ix_idempotency_keys_created_at"),
        "idempotency_keys",
        ["created_at"],
        if_not_exists=True,
    )


def downgrade() -> None:
    op.drop_index(op.f("ix_idempotency_keys_created_at"), table_name="idempotency_keys")
