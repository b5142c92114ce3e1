"""order_notifications: one reversal notice per reversal of an order's payment

Revision ID: 0002
Revises: 0001
Create Date: 2026-12-04 20:00:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0002"
down_revision: str | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_KINDS_BEFORE = "kind IN ('order_confirmation', 'payment_receipt', 'order_cancellation')"
_KINDS = (
    "kind IN ('order_confirmation', 'payment_receipt', 'order_cancellation', 'payment_reversal')"
)
_REFERENCE_PER_REVERSAL = "(kind IN ('payment_reversal')) = (reference <> '')"


def upgrade() -> None:
    # The rows so far are one per order and kind: an empty reference, as the check wants.
    op.add_column(
        "order_notifications",
        sa.Column("reference", sa.String(length=500), server_default="", nullable=False),
    )
    op.drop_constraint(op.f("pk_order_notifications"), "order_notifications", type_="primary")
    op.create_primary_key(
        op.f("pk_order_notifications"), "order_notifications", ["order_id", "kind", "reference"]
    )
    op.drop_constraint(
        op.f("ck_order_notifications_kind_known"), "order_notifications", type_="check"
    )
    op.create_check_constraint(
        op.f("ck_order_notifications_kind_known"), "order_notifications", _KINDS
    )
    op.create_check_constraint(
        op.f("ck_order_notifications_reference_per_reversal"),
        "order_notifications",
        _REFERENCE_PER_REVERSAL,
    )


def downgrade() -> None:
    # The old key holds one row per order and kind, and knows no reversal notices: their
    # record goes, so a reversal event delivered again after this would be told again.
    op.execute("DELETE FROM order_notifications WHERE kind = 'payment_reversal'")
    op.drop_constraint(
        op.f("ck_order_notifications_reference_per_reversal"), "order_notifications", type_="check"
    )
    op.drop_constraint(
        op.f("ck_order_notifications_kind_known"), "order_notifications", type_="check"
    )
    op.create_check_constraint(
        op.f("ck_order_notifications_kind_known"), "order_notifications", _KINDS_BEFORE
    )
    op.drop_constraint(op.f("pk_order_notifications"), "order_notifications", type_="primary")
    op.create_primary_key(
        op.f("pk_order_notifications"), "order_notifications", ["order_id", "kind"]
    )
    op.drop_column("order_notifications", "reference")
