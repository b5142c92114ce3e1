"""order-service's own database. Constraints live here, not only in code."""

from __future__ import annotations

from sqlalchemy import (
    BigInteger,
    Boolean,
    CheckConstraint,
    Column,
    DateTime,
    ForeignKey,
    Identity,
    Index,
    Integer,
    MetaData,
    PrimaryKeyConstraint,
    SmallInteger,
    String,
    Table,
    Text,
    Uuid,
    func,
)

from shop.database import NAMING_CONVENTION
from shop.messaging.schema import metadata as messaging_metadata

metadata = MetaData(naming_convention=NAMING_CONVENTION)

products = Table(
    "products",
    metadata,
    Column("sku", String(64), primary_key=True),
    Column("name", String(200), nullable=False),
    Column("description", Text, nullable=False, server_default=""),
    Column("price", BigInteger, nullable=False),
    Column("currency", String(3), nullable=False, server_default="IDR"),
    Column("stock", Integer, nullable=False),
    Column("active", Boolean, nullable=False, server_default="true"),
    Column("created_at", DateTime(timezone=True), nullable=False, server_default=func.now()),
    CheckConstraint("price >= 0", name="price_not_negative"),
    CheckConstraint("stock >= 0", name="stock_not_negative"),
)

orders = Table(
    "orders",
    metadata,
    Column("id", Uuid, primary_key=True),
    Column("number", String(32), nullable=False, unique=True),
    Column("customer_id", String(200), nullable=False),
    Column("customer_email", String(320), nullable=False),
    Column("status", String(24), nullable=False),
    Column("total", BigInteger, nullable=False),
    Column("currency", String(3), nullable=False),
    Column("created_at", DateTime(timezone=True), nullable=False, server_default=func.now()),
    Column("updated_at", DateTime(timezone=True), nullable=False, server_default=func.now()),
    Column("paid_at", DateTime(timezone=True)),
    Column("payment_id", Uuid),
    Column("payment_reference", String(500)),
    Column("cancelled_at", DateTime(timezone=True)),
    CheckConstraint("total >= 0", name="total_not_negative"),
    CheckConstraint(
        "status IN ('pending', 'paid', 'fulfilled', 'cancelled', 'partially_refunded', "
        "'refunded', 'charged_back')",
        name="status_known",
    ),
    # The caller's own orders, newest first (GET /v1/orders).
    Index(None, "customer_id", "created_at", "id"),
)

order_items = Table(
    "order_items",
    metadata,
    Column("order_id", Uuid, ForeignKey("orders.id", ondelete="CASCADE"), nullable=False),
    Column("line_no", SmallInteger, nullable=False),
    # Checked at commit (migration 0005): by then the checkout holds the product's row.
    Column(
        "sku",
        String(64),
        ForeignKey("products.sku", deferrable=True, initially="DEFERRED"),
        nullable=False,
    ),
    Column("name", String(200), nullable=False),
    Column("quantity", Integer, nullable=False),
    Column("unit_price", BigInteger, nullable=False),
    PrimaryKeyConstraint("order_id", "line_no"),
    CheckConstraint("quantity > 0", name="quantity_positive"),
    CheckConstraint("unit_price >= 0", name="unit_price_not_negative"),
)

idempotency_keys = Table(
    "idempotency_keys",
    metadata,
    Column("customer_id", String(200), nullable=False),
    Column("key", String(200), nullable=False),
    Column("request_hash", String(64), nullable=False),
    Column("order_id", Uuid, ForeignKey("orders.id", ondelete="CASCADE")),
    Column("response_status", SmallInteger),
    # The answer's JSON text as sent, so that a replay is byte for byte the same (JSONB
    # would reorder its keys).
    Column("response_body", Text),
    Column("created_at", DateTime(timezone=True), nullable=False, server_default=func.now()),
    PrimaryKeyConstraint("customer_id", "key"),
    # The retention cleanup deletes the oldest keys first, along this index.
    Index(None, "created_at"),
)

payment_conflicts = Table(
    "payment_conflicts",
    metadata,
    Column("id", BigInteger, Identity(always=True), primary_key=True),
    Column("order_id", Uuid, nullable=False),
    Column("payment_id", Uuid, nullable=False),
    Column("provider_event_id", String(200), nullable=False),
    Column("order_status", String(24)),
    Column("amount", BigInteger, nullable=False),
    Column("currency", String(3), nullable=False),
    Column("action", String(40), nullable=False),
    Column("recorded_at", DateTime(timezone=True), nullable=False, server_default=func.now()),
    # A refund due ends when its refund's PaymentReversed arrives.
    Column("resolved_at", DateTime(timezone=True)),
    Column("resolution", String(240)),
    CheckConstraint(
        "(resolved_at IS NULL) = (resolution IS NULL)", name="resolved_with_resolution"
    ),
)

order_reversals = Table(
    "order_reversals",
    metadata,
    Column("order_id", Uuid, ForeignKey("orders.id", ondelete="CASCADE"), nullable=False),
    Column("reference", String(200), nullable=False),
    Column("payment_id", Uuid, nullable=False),
    Column("kind", String(16), nullable=False),
    Column("amount", BigInteger, nullable=False),
    Column("reversed_total", BigInteger, nullable=False),
    Column("paid_amount", BigInteger, nullable=False),
    Column("currency", String(3), nullable=False),
    Column("reason", Text, nullable=False),
    Column("status_after", String(24), nullable=False),
    Column("reversed_at", DateTime(timezone=True), nullable=False),
    Column("recorded_at", DateTime(timezone=True), nullable=False, server_default=func.now()),
    # One row per reversal: a second event with the same reference changes nothing.
    PrimaryKeyConstraint("order_id", "reference"),
    CheckConstraint("kind IN ('refund', 'chargeback', 'void')", name="kind_known"),
    CheckConstraint("amount >= 0", name="amount_not_negative"),
    CheckConstraint("reversed_total >= amount", name="total_covers_amount"),
    CheckConstraint("paid_amount >= 0", name="paid_amount_not_negative"),
)

ALL_METADATA = [metadata, messaging_metadata]
"""What the migrations create: the service's tables, its outbox and its inbox."""
