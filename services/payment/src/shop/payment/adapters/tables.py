"""payment-service's own database. Constraints live here, not only in code."""

from __future__ import annotations

from sqlalchemy import (
    BigInteger,
    CheckConstraint,
    Column,
    DateTime,
    ForeignKey,
    Identity,
    Index,
    LargeBinary,
    MetaData,
    String,
    Table,
    UniqueConstraint,
    Uuid,
    func,
    text,
)

from shop.database import NAMING_CONVENTION
from shop.messaging.schema import metadata as messaging_metadata
from shop.payment.domain.gateway import ReversalKind
from shop.payment.domain.notifications import Meaning, Provider
from shop.payment.domain.status import PaymentStatus

metadata = MetaData(naming_convention=NAMING_CONVENTION)


def _one_of(
    column: str,
    values: type[PaymentStatus] | type[Provider] | type[Meaning] | type[ReversalKind],
) -> str:
    return f"{column} IN ({', '.join(repr(v.value) for v in values)})"


payments = Table(
    "payments",
    metadata,
    Column("id", Uuid, primary_key=True),
    Column("order_id", Uuid, nullable=False, unique=True),
    # The number the customer reads (SK-7KQ4-M2XD), so a person can find the payment by it.
    Column("order_number", String(32), nullable=False, unique=True),
    Column("amount", BigInteger, nullable=False),
    Column("currency", String(3), nullable=False),
    Column("status", String(32), nullable=False),
    Column("provider", String(16)),
    Column("provider_payment_id", String(200)),
    # Why a person must look at this payment (a notification for another amount, say).
    Column("flagged", String(500)),
    Column("created_at", DateTime(timezone=True), nullable=False, server_default=func.now()),
    Column("updated_at", DateTime(timezone=True), nullable=False, server_default=func.now()),
    Column("paid_at", DateTime(timezone=True)),
    # Every reversal recorded in payment_reversals, added up.
    Column("reversed_amount", BigInteger, nullable=False, server_default="0"),
    CheckConstraint("amount >= 0", name="amount_not_negative"),
    CheckConstraint("reversed_amount >= 0", name="reversed_amount_not_negative"),
    CheckConstraint(_one_of("status", PaymentStatus), name="status_known"),
    CheckConstraint(f"provider IS NULL OR {_one_of('provider', Provider)}", name="provider_known"),
    CheckConstraint("status <> 'paid' OR paid_at IS NOT NULL", name="paid_has_paid_at"),
)

payment_events = Table(
    "payment_events",
    metadata,
    Column("id", BigInteger, Identity(always=True), primary_key=True),
    Column("provider", String(16), nullable=False),
    Column("provider_event_id", String(200), nullable=False),
    Column("type", String(64), nullable=False),
    # The notification exactly as it arrived: what the signature was computed over. Kept
    # as evidence for a person, never read by the code: cleared (NULL) once processed for
    # the raw bodies' retention, unless its payment is flagged.
    Column("raw_body", LargeBinary),
    # What it means, as its webhook read it, so the worker needs no provider's parser.
    Column("meaning", String(16), nullable=False),
    Column("order_id", Uuid, nullable=False),
    Column("amount", BigInteger, nullable=False),
    Column("currency", String(3), nullable=False),
    Column("provider_payment_id", String(200), nullable=False),
    Column("received_at", DateTime(timezone=True), nullable=False, server_default=func.now()),
    Column("processed_at", DateTime(timezone=True)),
    Column("outcome", String(500)),
    UniqueConstraint("provider", "provider_event_id"),
    # The retention cleanup clears the oldest processed bodies first, along this index.
    Index(
        "ix_payment_events_raw_body_kept",
        "processed_at",
        postgresql_where=text("raw_body IS NOT NULL"),
    ),
    CheckConstraint(_one_of("provider", Provider), name="provider_known"),
    CheckConstraint(_one_of("meaning", Meaning), name="meaning_known"),
    CheckConstraint("amount >= 0", name="amount_not_negative"),
)

payment_reversals = Table(
    "payment_reversals",
    metadata,
    Column("id", BigInteger, Identity(always=True), primary_key=True),
    Column("payment_id", Uuid, ForeignKey("payments.id"), nullable=False),
    Column("kind", String(16), nullable=False),
    # The gateway's id of the reversal: each is recorded (and announced) once.
    Column("reference", String(200), nullable=False),
    Column("amount", BigInteger, nullable=False),
    Column("reversed_at", DateTime(timezone=True)),
    Column("recorded_at", DateTime(timezone=True), nullable=False, server_default=func.now()),
    UniqueConstraint("payment_id", "reference"),
    CheckConstraint(_one_of("kind", ReversalKind), name="kind_known"),
    CheckConstraint("amount > 0", name="amount_positive"),
)

ALL_METADATA = [metadata, messaging_metadata]
"""What the migrations create: the service's tables, its outbox and its inbox."""
