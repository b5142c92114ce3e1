"""payment reversals: the order's statuses after one (partially_refunded, refunded,
charged_back), order_reversals keyed by (order_id, reference), and a refund due that ends
(payment_conflicts.resolved_at and resolution)

Revision ID: 0003
Revises: 0002
Create Date: 2026-12-04 20:20:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0003"
down_revision: str | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

OLD_STATUSES = "status IN ('pending', 'paid', 'fulfilled', 'cancelled')"
NEW_STATUSES = (
    "status IN ('pending', 'paid', 'fulfilled', 'cancelled', 'partially_refunded', "
    "'refunded', 'charged_back')"
)


def upgrade() -> None:
    op.alter_column("orders", "status", type_=sa.String(length=24), existing_nullable=False)
    op.drop_constraint("ck_orders_status_known", "orders", type_="check")
    op.create_check_constraint(op.f("ck_orders_status_known"), "orders", NEW_STATUSES)
    op.alter_column(
        "payment_conflicts", "order_status", type_=sa.String(length=24), existing_nullable=True
    )
    op.add_column(
        "payment_conflicts", sa.Column("resolved_at", sa.DateTime(timezone=True), nullable=True)
    )
    op.add_column(
        "payment_conflicts", sa.Column("resolution", sa.String(length=240), nullable=True)
    )
    op.create_check_constraint(
        op.f("ck_payment_conflicts_resolved_with_resolution"),
        "payment_conflicts",
        "(resolved_at IS NULL) = (resolution IS NULL)",
    )
    op.create_table(
        "order_reversals",
        sa.Column("order_id", sa.Uuid(), nullable=False),
        sa.Column("reference", sa.String(length=200), nullable=False),
        sa.Column("payment_id", sa.Uuid(), nullable=False),
        sa.Column("kind", sa.String(length=16), nullable=False),
        sa.Column("amount", sa.BigInteger(), nullable=False),
        sa.Column("reversed_total", sa.BigInteger(), nullable=False),
        sa.Column("paid_amount", sa.BigInteger(), nullable=False),
        sa.Column("currency", sa.String(length=3), nullable=False),
        sa.Column("reason", sa.Text(), nullable=False),
        sa.Column("status_after", sa.String(length=24), nullable=False),
        sa.Column("reversed_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column(
            "recorded_at",
            sa.DateTime(timezone=True),
            server_default=sa.text("now()"),
            nullable=False,
        ),
        sa.CheckConstraint(
            "kind IN ('refund', 'chargeback', 'void')", name=op.f("ck_order_reversals_kind_known")
        ),
        sa.CheckConstraint("amount >= 0", name=op.f("ck_order_reversals_amount_not_negative")),
        sa.CheckConstraint(
            "reversed_total >= amount", name=op.f("ck_order_reversals_total_covers_amount")
        ),
        sa.CheckConstraint(
            "paid_amount >= 0", name=op.f("ck_order_reversals_paid_amount_not_negative")
        ),
        sa.ForeignKeyConstraint(
            ["order_id"],
            ["orders.id"],
            name=op.f("fk_order_reversals_order_id_orders"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("order_id", "reference", name=op.f("pk_order_reversals")),
    )


def downgrade() -> None:
    # An order reversed since cannot be put back into the old statuses: refused, not lost.
    op.drop_table("order_reversals")
    op.drop_constraint(
        "ck_payment_conflicts_resolved_with_resolution", "payment_conflicts", type_="check"
    )
    op.drop_column("payment_conflicts", "resolution")
    op.drop_column("payment_conflicts", "resolved_at")
    op.alter_column(
        "payment_conflicts", "order_status", type_=sa.String(length=16), existing_nullable=True
    )
    op.drop_constraint("ck_orders_status_known", "orders", type_="check")
    op.create_check_constraint(op.f("ck_orders_status_known"), "orders", OLD_STATUSES)
    op.alter_column("orders", "status", type_=sa.String(length=16), existing_nullable=False)
