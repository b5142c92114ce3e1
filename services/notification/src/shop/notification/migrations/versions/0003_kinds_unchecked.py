"""order_notifications: the kind of e-mail no longer checked against a fixed list

Revision ID: 0003
Revises: 0002
Create Date: 2026-12-05 23:30:00
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "0003"
down_revision: str | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_KINDS = (
    "kind IN ('order_confirmation', 'payment_receipt', 'order_cancellation', 'payment_reversal')"
)


def upgrade() -> None:
    # The kinds are the code's (NotificationKind, written by the notifier alone): listed
    # here too, every new e-mail needed a migration of its own. What the table must keep
    # stays checked: one row per e-mail (the key), and a reference on exactly the kinds
    # sent once per reversal.
    op.drop_constraint(
        op.f("ck_order_notifications_kind_known"), "order_notifications", type_="check"
    )


def downgrade() -> None:
    # NOT VALID: rows of kinds added since stay (the record of e-mails sent), and only new
    # rows are checked against the four kinds of 0002.
    op.create_check_constraint(
        op.f("ck_order_notifications_kind_known"),
        "order_notifications",
        _KINDS,
        postgresql_not_valid=True,
    )
