"""Alembic environment of payment-service: its tables and shop.messaging's outbox and inbox."""

from shop.database.alembic_env import run_migrations
from shop.payment.adapters.tables import ALL_METADATA

run_migrations(ALL_METADATA)
