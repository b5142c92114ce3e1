"""notification-service's database migrations."""

from __future__ import annotations

from pathlib import Path

from shop.database import Migrations

MIGRATIONS = Migrations(Path(__file__).with_name("migrations"))
migrate = MIGRATIONS.upgrade
migrate_async = MIGRATIONS.upgrade_async
