"""notification-service's Alembic migrations (``env.py`` and ``versions/`` beside this
file), run from code: ``python -m shop.notification migrate``, test fixtures, benchmarks."""

from __future__ import annotations

from pathlib import Path

from shop.database import Migrations
from shop.messaging import migrations as messaging

# shop.messaging's own branch keeps the consumers' dead letters (and the outbox and inbox,
# which this service does not use yet), as in the other services.
MIGRATIONS = Migrations(Path(__file__).parent, libraries=[messaging.VERSIONS])
migrate = MIGRATIONS.upgrade
migrate_async = MIGRATIONS.upgrade_async
