"""The outbox's and the inbox's own Alembic migrations: a branch (``messaging``) that each
service using them runs beside its own, so that their tables are defined, and changed, in
one place. A service names this folder among its migrations' (see
:class:`shop.database.Migrations`)::

    Migrations(Path(__file__).parent, libraries=[shop.messaging.migrations.VERSIONS])
"""

from __future__ import annotations

from pathlib import Path
from typing import Final

VERSIONS: Final = Path(__file__).parent / "versions"
"""The branch's revisions, read by Alembic in the service's environment."""
