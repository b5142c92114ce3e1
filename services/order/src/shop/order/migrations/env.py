"""Alembic environment of order-service: its tables and shop.messaging's outbox and inbox."""

from shop.database.alembic_env import run_migrations
from shop.order.adapters.tables import ALL_METADATA

run_migrations(ALL_METADATA)
