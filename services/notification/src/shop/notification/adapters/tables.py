"""notification-service's own database: what was sent. Constraints live here, not only in
code."""

from __future__ import annotations

from sqlalchemy import (
    CheckConstraint,
    Column,
    DateTime,
    MetaData,
    PrimaryKeyConstraint,
    String,
    Table,
    Uuid,
    func,
)

from shop.database import NAMING_CONVENTION
from shop.notification.domain.kinds import NotificationKind

metadata = MetaData(naming_convention=NAMING_CONVENTION)

_KINDS = ", ".join(f"'{kind.value}'" for kind in NotificationKind)

order_notifications = Table(
    "order_notifications",
    metadata,
    Column("order_id", Uuid, nullable=False),
    Column("kind", String(32), nullable=False),
    Column("recipient", String(320), nullable=False),
    Column("message_id", String(255), nullable=False),
    # The event the e-mail answered (the delivery that got through).
    Column("event_id", Uuid, nullable=False),
    Column("sent_at", DateTime(timezone=True), nullable=False, server_default=func.now()),
    # Written only after the provider accepted the e-mail (mark-after-send): the row is
    # the proof of sending, and the key makes a second one for the same order impossible.
    PrimaryKeyConstraint("order_id", "kind"),
    CheckConstraint(f"kind IN ({_KINDS})", name="kind_known"),
)
