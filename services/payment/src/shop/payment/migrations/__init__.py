"""payment-service's Alembic migrations (``env.py`` and ``versions/`` beside this file), run
from code: ``python -m shop.payment migrate``, test fixtures, benchmarks."""

from __future__ import annotations

from pathlib import Path

from shop.database import Migrations
from shop.messaging import migrations as messaging

# The outbox and inbox come from shop.messaging's own branch.
MIGRATIONS = Migrations(Path(__file__).parent, libraries=[messaging.VERSIONS])
migrate = MIGRATIONS.upgrade
migrate_async = MIGRATIONS.upgrade_async
