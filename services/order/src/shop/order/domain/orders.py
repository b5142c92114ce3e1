"""What the API answers and what an idempotent replay returns, byte for byte the same."""

from __future__ import annotations

import uuid
from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field

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


class OrderPage(BaseModel):
    orders: list[OrderView]
    next_cursor: str | None = Field(
        description="Pass as `cursor` for the next (older) page; null on the last page."
    )
