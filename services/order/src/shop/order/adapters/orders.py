"""Reading products and orders."""

from __future__ import annotations

import base64
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import and_, or_, select, tuple_
from sqlalchemy.ext.asyncio import AsyncSession

from shop.contracts import OrderLine
from shop.order.adapters.tables import order_items, orders, products
from shop.order.domain.errors import OrderNotFound
from shop.order.domain.money import line_total
from shop.order.views import OrderLineView, OrderPage, OrderView, ProductView


class InvalidCursor(ValueError):
    """A pagination cursor this service did not hand out."""


@dataclass(frozen=True, slots=True)
class OrderRecord:
    """An order as its events describe it: the view plus who placed it."""

    view: OrderView
    customer_id: str
    customer_email: str

    def event_facts(self) -> dict[str, Any]:
        """The fields every order event carries (OrderCreated, OrderPaid, OrderCancelled)."""
        return {
            "order_id": self.view.id,
            "order_number": self.view.number,
            "customer_id": self.customer_id,
            "customer_email": self.customer_email,
            "lines": [
                OrderLine(
                    sku=line.sku, name=line.name, quantity=line.quantity, unit_price=line.unit_price
                )
                for line in self.view.lines
            ],
            "total": self.view.total,
            "currency": self.view.currency,
        }


def _product(row: Any) -> ProductView:
    return ProductView(
        sku=row.sku,
        name=row.name,
        description=row.description,
        price=row.price,
        currency=row.currency,
        in_stock=row.stock,
    )


async def list_products(session: AsyncSession) -> list[ProductView]:
    rows = await session.execute(select(products).where(products.c.active).order_by(products.c.sku))
    return [_product(row) for row in rows]


async def get_product(session: AsyncSession, sku: str) -> ProductView | None:
    row = (
        await session.execute(select(products).where(products.c.sku == sku, products.c.active))
    ).first()
    return _product(row) if row else None


async def load_order_record(
    session: AsyncSession, order_id: uuid.UUID, *, customer_id: str | None = None
) -> OrderRecord:
    """The order, or :class:`OrderNotFound` (also when it belongs to another customer)."""
    query = select(orders).where(orders.c.id == order_id)
    if customer_id is not None:
        query = query.where(orders.c.customer_id == customer_id)
    order = (await session.execute(query)).first()
    if order is None:
        raise OrderNotFound(order_id)
    lines = await _lines_of(session, [order_id])
    return OrderRecord(_view(order, lines[order_id]), order.customer_id, order.customer_email)


async def load_order(
    session: AsyncSession, order_id: uuid.UUID, *, customer_id: str | None = None
) -> OrderView:
    return (await load_order_record(session, order_id, customer_id=customer_id)).view


async def list_orders(
    session: AsyncSession, customer_id: str, *, limit: int, cursor: str | None
) -> OrderPage:
    """The customer's orders, newest first, ``limit`` at a time (keyset pagination)."""
    query = select(orders).where(orders.c.customer_id == customer_id)
    if cursor is not None:
        created_at, order_id = _decode_cursor(cursor)
        query = query.where(
            or_(
                orders.c.created_at < created_at,
                and_(orders.c.created_at == created_at, orders.c.id < order_id),
            )
        )
    query = query.order_by(tuple_(orders.c.created_at, orders.c.id).desc()).limit(limit + 1)
    rows = (await session.execute(query)).all()
    page, more = rows[:limit], len(rows) > limit
    lines = await _lines_of(session, [row.id for row in page])
    return OrderPage(
        orders=[_view(row, lines[row.id]) for row in page],
        next_cursor=_encode_cursor(page[-1].created_at, page[-1].id) if more else None,
    )


async def _lines_of(
    session: AsyncSession, order_ids: list[uuid.UUID]
) -> dict[uuid.UUID, list[OrderLineView]]:
    result: dict[uuid.UUID, list[OrderLineView]] = {order_id: [] for order_id in order_ids}
    if not order_ids:
        return result
    rows = await session.execute(
        select(order_items)
        .where(order_items.c.order_id.in_(order_ids))
        .order_by(order_items.c.order_id, order_items.c.line_no)
    )
    for row in rows:
        result[row.order_id].append(
            OrderLineView(
                sku=row.sku,
                name=row.name,
                quantity=row.quantity,
                unit_price=row.unit_price,
                line_total=line_total(row.quantity, row.unit_price),
            )
        )
    return result


def _view(order: Any, lines: list[OrderLineView]) -> OrderView:
    return OrderView(
        id=order.id,
        number=order.number,
        status=order.status,
        lines=lines,
        total=order.total,
        currency=order.currency,
        created_at=order.created_at,
    )


def _encode_cursor(created_at: datetime, order_id: uuid.UUID) -> str:
    raw = f"{created_at.isoformat()}|{order_id}".encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _decode_cursor(cursor: str) -> tuple[datetime, uuid.UUID]:
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode()
        created_at, order_id = raw.split("|")
        moment = datetime.fromisoformat(created_at)
        if moment.tzinfo is None:
            raise ValueError("cursor time without a timezone")
        # Converted here, not by the driver: a time at the edge of the calendar overflows.
        return moment.astimezone(UTC), uuid.UUID(order_id)
    except (ValueError, OverflowError, UnicodeDecodeError) as error:
        raise InvalidCursor("cursor is not one this service handed out") from error
