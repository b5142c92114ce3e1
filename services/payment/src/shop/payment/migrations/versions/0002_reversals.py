"""payments follow the gateway: refunds due, reversals, chargebacks

Revision ID: 0002
Revises: 0001
Create Date: 2026-12-04 19:30:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0002"
down_revision: str | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_STATUSES_BEFORE = "status IN ('pending', 'paid', 'failed', 'expired')"
_STATUSES = (
    "status IN ('pending', 'paid', 'failed', 'expired', 'refund_due', 'partially_refunded', "
    "'refunded', 'charged_back')"
)
_MEANINGS_BEFORE = "meaning IN ('paid', 'failed', 'pending', 'refunded')"
_MEANINGS = "meaning IN ('paid', 'failed', 'pending', 'refunded', 'charged_back')"


def upgrade() -> None:
    # "partially_refunded" is longer than the 16 characters the first states needed.
    op.alter_column(
        "payments", "status", type_=sa.String(length=32), existing_type=sa.String(length=16)
    )
    op.drop_constraint("ck_payments_status_known", "payments", type_="check")
    op.create_check_constraint("ck_payments_status_known", "payments", _STATUSES)
    op.drop_constraint("ck_payment_events_meaning_known", "payment_events", type_="check")
    op.create_check_constraint("ck_payment_events_meaning_known", "payment_events", _MEANINGS)
    op.add_column(
        "payments",
        sa.Column("reversed_amount", sa.BigInteger(), server_default="0", nullable=False),
    )
    op.create_check_constraint(
        "ck_payments_reversed_amount_not_negative", "payments", "reversed_amount >= 0"
    )
    op.create_table(
        "payment_reversals",
        sa.Column("id", sa.BigInteger(), sa.Identity(always=True), nullable=False),
        sa.Column("payment_id", sa.Uuid(), nullable=False),
        sa.Column("kind", sa.String(length=16), nullable=False),
        sa.Column("reference", sa.String(length=200), nullable=False),
        sa.Column("amount", sa.BigInteger(), nullable=False),
        sa.Column("reversed_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column(
            "recorded_at",
            sa.DateTime(timezone=True),
            server_default=sa.text("now()"),
            nullable=False,
        ),
        sa.CheckConstraint("amount > 0", name=op.f("ck_payment_reversals_amount_positive")),
        sa.CheckConstraint(
            "kind IN ('refund', 'chargeback', 'void')",
            name=op.f("ck_payment_reversals_kind_known"),
        ),
        sa.ForeignKeyConstraint(
            ["payment_id"],
            ["payments.id"],
            name=op.f("fk_payment_reversals_payment_id_payments"),
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_payment_reversals")),
        sa.UniqueConstraint(
            "payment_id", "reference", name=op.f("uq_payment_reversals_payment_id_reference")
        ),
    )


def downgrade() -> None:
    op.drop_table("payment_reversals")
    op.drop_constraint("ck_payments_reversed_amount_not_negative", "payments", type_="check")
    op.drop_column("payments", "reversed_amount")
    op.drop_constraint("ck_payment_events_meaning_known", "payment_events", type_="check")
    op.create_check_constraint(
        "ck_payment_events_meaning_known", "payment_events", _MEANINGS_BEFORE
    )
    op.drop_constraint("ck_payments_status_known", "payments", type_="check")
    op.create_check_constraint("ck_payments_status_known", "payments", _STATUSES_BEFORE)
    op.alter_column(
        "payments", "status", type_=sa.String(length=16), existing_type=sa.String(length=32)
    )
