"""The orders and products of order-service's database, in SQLAlchemy: the Postgres side
of :class:`shop.order.ports.OrderStore` (the checkout's hot path is :mod:`.checkout`)."""

from __future__ import annotations

import base64
import uuid
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import and_, bindparam, func, insert, or_, select, text, tuple_, update
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from shop.contracts import Contract, PaymentReceived, PaymentReversed, ReversalKind
from shop.messaging import MessageContext, add
from shop.order.adapters.tables import (
    order_items,
    order_reversals,
    orders,
    payment_conflicts,
    products,
)
from shop.order.domain.errors import InvalidCursor, OrderNotFound
from shop.order.domain.orders import (
    OrderLineView,
    OrderPage,
    OrderRecord,
    OrderView,
    ProductView,
)
from shop.order.domain.payments import PaymentConflict
from shop.order.domain.reversals import RecordedReversal
from shop.order.domain.status import OrderStatus


class SqlOrderStore:
    def __init__(self, sessions: async_sessionmaker[AsyncSession]) -> None:
        self.sessions = sessions

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[SqlOrders]:
        async with self.sessions() as session, session.begin():
            yield SqlOrders(session)

    @asynccontextmanager
    async def reading(self) -> AsyncIterator[SqlOrders]:
        async with self.sessions() as session:
            yield SqlOrders(session)

    def joining(self, ctx: MessageContext) -> SqlOrders:
        return SqlOrders(ctx.db)

    async def check(self) -> None:
        async with self.sessions() as session:
            await session.execute(text("SELECT 1"))


class SqlOrders:
    def __init__(self, session: AsyncSession) -> None:
        self.session = session

    async def products(self) -> list[ProductView]:
        rows = await self.session.execute(
            select(products).where(products.c.active).order_by(products.c.sku)
        )
        return [_product(row) for row in rows]

    async def product(self, sku: str) -> ProductView | None:
        row = (
            await self.session.execute(
                select(products).where(products.c.sku == sku, products.c.active)
            )
        ).first()
        return _product(row) if row else None

    async def get(
        self, order_id: uuid.UUID, *, customer_id: str | None = None, for_update: bool = False
    ) -> OrderRecord:
        query = select(orders).where(orders.c.id == order_id)
        if customer_id is not None:
            query = query.where(orders.c.customer_id == customer_id)
        if for_update:
            query = query.with_for_update()
        order = (await self.session.execute(query)).first()
        if order is None:
            raise OrderNotFound(order_id)
        lines = await self._lines_of([order_id])
        return OrderRecord(_view(order, lines[order_id]), order.customer_id, order.customer_email)

    async def page(self, customer_id: str, *, limit: int, cursor: str | None) -> OrderPage:
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
        rows = (await self.session.execute(query)).all()
        page, more = rows[:limit], len(rows) > limit
        lines = await self._lines_of([row.id for row in page])
        return OrderPage(
            orders=[_view(row, lines[row.id]) for row in page],
            next_cursor=_encode_cursor(page[-1].created_at, page[-1].id) if more else None,
        )

    async def return_stock(self, quantities: Mapping[str, int]) -> None:
        # In sku order, as the checkout locks them: concurrent transactions queue instead
        # of deadlocking.
        await self.session.execute(
            update(products)
            .where(products.c.sku == bindparam("b_sku"))
            .values(stock=products.c.stock + bindparam("b_quantity")),
            [{"b_sku": sku, "b_quantity": quantities[sku]} for sku in sorted(quantities)],
        )

    async def mark_cancelled(self, order_id: uuid.UUID, *, at: datetime) -> None:
        await self.session.execute(
            update(orders)
            .where(orders.c.id == order_id)
            .values(status=OrderStatus.CANCELLED, cancelled_at=at, updated_at=at)
        )

    async def mark_paid(self, payment: PaymentReceived) -> None:
        await self.session.execute(
            update(orders)
            .where(orders.c.id == payment.order_id, orders.c.status == OrderStatus.PENDING)
            .values(
                status=OrderStatus.PAID,
                paid_at=payment.paid_at,
                payment_id=payment.payment_id,
                payment_reference=payment.provider_event_id,
                updated_at=func.now(),
            )
        )

    async def record_conflict(
        self, payment: PaymentReceived, *, order_status: OrderStatus, conflict: PaymentConflict
    ) -> None:
        await self.session.execute(
            insert(payment_conflicts).values(
                order_id=payment.order_id,
                payment_id=payment.payment_id,
                provider_event_id=payment.provider_event_id,
                order_status=order_status,
                amount=payment.amount,
                currency=payment.currency,
                action=conflict.value,
            )
        )

    async def record_reversal(self, reversal: PaymentReversed, *, status: OrderStatus) -> bool:
        kept = await self.session.execute(
            pg_insert(order_reversals)
            .values(
                order_id=reversal.order_id,
                reference=reversal.reference,
                payment_id=reversal.payment_id,
                kind=reversal.kind.value,
                amount=reversal.amount,
                reversed_total=reversal.reversed_total,
                paid_amount=reversal.paid_amount,
                currency=reversal.currency,
                reason=reversal.reason,
                status_after=status,
                reversed_at=reversal.reversed_at,
            )
            .on_conflict_do_nothing(index_elements=["order_id", "reference"])
            .returning(order_reversals.c.reference)
        )
        return kept.first() is not None

    async def furthest_reversal(
        self, order_id: uuid.UUID, payment_id: uuid.UUID
    ) -> RecordedReversal | None:
        row = (
            await self.session.execute(
                select(order_reversals)
                .where(
                    # order_id first: the primary key's index finds the order's few rows.
                    order_reversals.c.order_id == order_id,
                    order_reversals.c.payment_id == payment_id,
                )
                .order_by(order_reversals.c.reversed_total.desc())
                .limit(1)
            )
        ).first()
        if row is None:
            return None
        return RecordedReversal(
            kind=ReversalKind(row.kind),
            reference=row.reference,
            reversed_total=row.reversed_total,
            reversed_at=row.reversed_at,
        )

    async def mark_reversed(self, order_id: uuid.UUID, status: OrderStatus) -> None:
        await self.session.execute(
            update(orders)
            .where(orders.c.id == order_id)
            .values(status=status, updated_at=func.now())
        )

    async def resolve_conflicts(
        self, order_id: uuid.UUID, conflict: PaymentConflict, *, resolution: str, at: datetime
    ) -> int:
        ended = await self.session.execute(
            update(payment_conflicts)
            .where(
                payment_conflicts.c.order_id == order_id,
                payment_conflicts.c.action == conflict.value,
                payment_conflicts.c.resolved_at.is_(None),
            )
            .values(resolved_at=at, resolution=resolution)
            .returning(payment_conflicts.c.id)
        )
        return len(ended.all())

    async def add_event(self, event: Contract, *, key: str) -> None:
        await add(self.session, event, key=key)

    async def _lines_of(self, order_ids: list[uuid.UUID]) -> dict[uuid.UUID, list[OrderLineView]]:
        result: dict[uuid.UUID, list[OrderLineView]] = {order_id: [] for order_id in order_ids}
        if not order_ids:
            return result
        rows = await self.session.execute(
            select(order_items)
            .where(order_items.c.order_id.in_(order_ids))
            .order_by(order_items.c.order_id, order_items.c.line_no)
        )
        for row in rows:
            result[row.order_id].append(
                OrderLineView.of(row.sku, row.name, row.quantity, row.unit_price)
            )
        return result


def _product(row: Any) -> ProductView:
    return ProductView(
        sku=row.sku,
        name=row.name,
        description=row.description,
        price=row.price,
        currency=row.currency,
        in_stock=row.stock,
    )


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
        raise InvalidCursor from error
