"""Orders and products as the shop reads them: what the API answers, what an idempotent
replay returns byte for byte, and the facts every order event carries."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from shop.contracts import OrderCreated, OrderLine
from shop.order.domain.money import line_total
from shop.order.domain.status import OrderStatus


class ProductView(BaseModel):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "sku": "SERUM-NIA-30",
                    "name": "Niacinamide 10% Serum 30 ml",
                    "description": "Evens tone and calms redness.",
                    "price": 89000,
                    "currency": "IDR",
                    "in_stock": 120,
                }
            ]
        }
    )

    sku: str
    name: str
    description: str
    price: int = Field(description="In the currency's minor unit (IDR has none).")
    currency: str
    in_stock: int


class OrderLineView(BaseModel):
    sku: str
    name: str
    quantity: int
    unit_price: int
    line_total: int

    @classmethod
    def of(cls, sku: str, name: str, quantity: int, unit_price: int) -> OrderLineView:
        """The line as it reads, with its total worked out."""
        return cls(
            sku=sku,
            name=name,
            quantity=quantity,
            unit_price=unit_price,
            line_total=line_total(quantity, unit_price),
        )


class OrderView(BaseModel):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "id": "6f1c2a4e-8d3b-4c1a-9e2f-0a1b2c3d4e5f",
                    "number": "SK-7KQ4-M2XD",
                    "status": "pending",
                    "lines": [
                        {
                            "sku": "SERUM-NIA-30",
                            "name": "Niacinamide 10% Serum 30 ml",
                            "quantity": 2,
                            "unit_price": 89000,
                            "line_total": 178000,
                        }
                    ],
                    "total": 178000,
                    "currency": "IDR",
                    "created_at": "2026-12-03T09:30:00Z",
                }
            ]
        }
    )

    id: uuid.UUID
    number: str
    status: OrderStatus
    lines: list[OrderLineView]
    total: int
    currency: str
    created_at: datetime


def placed_order_view(event: OrderCreated) -> OrderView:
    """The order as its checkout answers it: pending, as OrderCreated describes it."""
    return OrderView(
        id=event.order_id,
        number=event.order_number,
        status=OrderStatus.PENDING,
        # Plain dicts, validated once with the view: a model per line first would validate
        # each line twice on the checkout's hot path.
        lines=[
            {**line.model_dump(), "line_total": line_total(line.quantity, line.unit_price)}
            for line in event.lines
        ],
        total=event.total,
        currency=event.currency,
        created_at=event.placed_at,
    )


class OrderPage(BaseModel):
    orders: list[OrderView]
    next_cursor: str | None = Field(
        description="Pass as `cursor` for the next (older) page; null on the last page."
    )


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
