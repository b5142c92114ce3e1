"""What every service's own database needs, once: engines and sessions on asyncpg, Alembic
migrations run from code, and one naming convention for constraints (so that migrations
name them the same way in every service)."""

from shop.database.engine import create_engine, session_factory, sqlalchemy_url
from shop.database.migrations import Migrations
from shop.database.naming import NAMING_CONVENTION
from shop.database.timeouts import DatabaseTimeouts

__all__ = [
    "NAMING_CONVENTION",
    "DatabaseTimeouts",
    "Migrations",
    "create_engine",
    "session_factory",
    "sqlalchemy_url",
]
