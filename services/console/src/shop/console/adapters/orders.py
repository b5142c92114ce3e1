"""Order-service's ``orders`` table, read-only: the console looks orders up by id or number
and shows their status; it never changes one (that is order-service's alone)."""

from __future__ import annotations

import uuid
from typing import Any, Final

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from shop.console.domain.orders import OrderSummary

COLUMNS: Final = (
    "id, number, status, customer_id, customer_email, total, currency, created_at, "
    "updated_at, paid_at, payment_reference, cancelled_at"
)


class SqlOrderDirectory:
    """The orders in order-service's database at ``engine`` (a read-only transaction each)."""

    def __init__(self, engine: AsyncEngine) -> None:
        self.engine = engine

    async def search(self, query: str, *, limit: int = 50) -> list[OrderSummary]:
        query = query.strip()
        if not query:
            sql = f"SELECT {COLUMNS} FROM orders ORDER BY created_at DESC, id LIMIT :limit"
            return await self._select(sql, limit=limit)
        try:
            order_id = uuid.UUID(query)
        except ValueError:
            escaped = query.upper().replace("\\", "\\\\").replace("%", r"\%").replace("_", r"\_")
            sql = (
                f"SELECT {COLUMNS} FROM orders WHERE number LIKE :pattern "
                "ORDER BY created_at DESC, id LIMIT :limit"
            )
            return await self._select(sql, pattern=f"%{escaped}%", limit=limit)
        return await self._select(f"SELECT {COLUMNS} FROM orders WHERE id = :id", id=order_id)

    async def get(self, order_id: uuid.UUID) -> OrderSummary | None:
        found = await self._select(f"SELECT {COLUMNS} FROM orders WHERE id = :id", id=order_id)
        return found[0] if found else None

    async def check(self) -> None:
        async with self.engine.connect() as connection:
            await connection.execute(text("SELECT 1"))

    async def close(self) -> None:
        await self.engine.dispose()

    async def _select(self, sql: str, **parameters: Any) -> list[OrderSummary]:
        async with self.engine.connect() as connection:
            await connection.execute(text("SET TRANSACTION READ ONLY"))
            rows = (await connection.execute(text(sql), parameters)).mappings().all()
        return [OrderSummary(**dict(row)) for row in rows]
