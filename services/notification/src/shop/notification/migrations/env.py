"""Alembic environment of notification-service."""

from shop.database.alembic_env import run_migrations
from shop.notification.adapters.tables import metadata

run_migrations(metadata)
