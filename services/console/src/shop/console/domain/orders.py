"""An order as the console shows it: read from order-service's internal API, never changed."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime


@dataclass(frozen=True, slots=True)
class OrderSummary:
    id: uuid.UUID
    number: str
    status: str
    customer_id: str
    customer_email: str
    total: int
    """In the currency's minor unit."""
    currency: str
    created_at: datetime
    updated_at: datetime
    paid_at: datetime | None = None
    payment_reference: str | None = None
    cancelled_at: datetime | None = None
