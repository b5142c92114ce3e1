"""notification-service's own database: what was sent. Constraints live here, not only in
code."""

from __future__ import annotations

from sqlalchemy import (
    CheckConstraint,
    Column,
    DateTime,
    Index,
    MetaData,
    PrimaryKeyConstraint,
    String,
    Table,
    Uuid,
    func,
)

from shop.database import NAMING_CONVENTION
from shop.messaging.schema import metadata as messaging_metadata
from shop.notification.domain.kinds import PER_REVERSAL

metadata = MetaData(naming_convention=NAMING_CONVENTION)

_PER_REVERSAL = ", ".join(f"'{kind.value}'" for kind in sorted(PER_REVERSAL))

order_notifications = Table(
    "order_notifications",
    metadata,
    Column("order_id", Uuid, nullable=False),
    Column("kind", String(32), nullable=False),
    # The gateway's id of the reversal a reversal notice is about (as long as the contract
    # allows); empty for the kinds sent once per order.
    Column("reference", String(500), nullable=False, server_default=""),
    Column("recipient", String(320), nullable=False),
    Column("message_id", String(255), nullable=False),
    # The event the e-mail answered (the delivery that got through).
    Column("event_id", Uuid, nullable=False),
    Column("sent_at", DateTime(timezone=True), nullable=False, server_default=func.now()),
    # Written only after the provider accepted the e-mail (mark-after-send): the row is
    # the proof of sending, and the key makes a second one for the same order and kind
    # (and reversal) impossible.
    PrimaryKeyConstraint("order_id", "kind", "reference"),
    # The retention cleanup deletes the oldest marks first, along this index.
    Index(None, "sent_at"),
    # A reversal notice without its reversal would be one per order, and swallow the next.
    CheckConstraint(
        f"(kind IN ({_PER_REVERSAL})) = (reference <> '')", name="reference_per_reversal"
    ),
)

ALL_METADATA = [metadata, messaging_metadata]
"""What the migrations create: the service's tables and the messaging library's (its dead
letters; the outbox and inbox come with them, unused by this service so far)."""
