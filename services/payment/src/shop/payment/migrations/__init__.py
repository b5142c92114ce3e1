"""payment-service's Alembic migrations (``env.py`` and ``versions/`` beside this file), run
from code: ``python -m shop.payment migrate``, test fixtures, benchmarks."""

from __future__ import annotations

from pathlib import Path

from shop.database import Migrations

MIGRATIONS = Migrations(Path(__file__).parent)
migrate = MIGRATIONS.upgrade
migrate_async = MIGRATIONS.upgrade_async
