"""order_notifications

Revision ID: 0001
Revises: (none)
Create Date: 2026-12-03 08:40:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0001"
down_revision: str | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "order_notifications",
        sa.Column("order_id", sa.Uuid(), nullable=False),
        sa.Column("kind", sa.String(length=32), nullable=False),
        sa.Column("recipient", sa.String(length=320), nullable=False),
        sa.Column("message_id", sa.String(length=255), nullable=False),
        sa.Column("event_id", sa.Uuid(), nullable=False),
        sa.Column(
            "sent_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False
        ),
        sa.CheckConstraint(
            "kind IN ('order_confirmation', 'payment_receipt', 'order_cancellation')",
            name=op.f("ck_order_notifications_kind_known"),
        ),
        sa.PrimaryKeyConstraint("order_id", "kind", name=op.f("pk_order_notifications")),
    )


def downgrade() -> None:
    op.drop_table("order_notifications")
