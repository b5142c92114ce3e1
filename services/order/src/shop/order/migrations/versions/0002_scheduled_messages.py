"""scheduled messages in the outbox (now shop.messaging's branch: nothing here)

Revision ID: 0002
Revises: 0001
Create Date: 2026-12-03 14:10:00.000000

This revision once added ``due_at`` to the outbox this service's first revision made. The
outbox is the library's now (its branch creates it, and brings such an older one up to
date); the revision stays, empty, so that a database stamped with it still upgrades.
"""

from __future__ import annotations

from collections.abc import Sequence

revision: str = "0002"
down_revision: str | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    pass


def downgrade() -> None:
    pass
