"""Request bodies, validated before any database work."""

from __future__ import annotations

import hashlib
import json
from typing import Annotated

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StringConstraints,
    field_validator,
)

from shop.order.domain.money import MAX_LINE_QUANTITY
from shop.web.inputs import WHOLE_NUMBER

MAX_LINES = 50
SKU_PATTERN = r"^[A-Z0-9][A-Z0-9-]*$"
"""What a sku looks like: capitals, digits and dashes (``SERUM-NIA-30``)."""


class CheckoutLine(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    sku: Annotated[str, StringConstraints(min_length=1, max_length=64, pattern=SKU_PATTERN)]
    quantity: Annotated[int, Field(ge=1, le=MAX_LINE_QUANTITY), WHOLE_NUMBER]


class CheckoutRequest(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
        strict=True,
        json_schema_extra={
            "examples": [
                {
                    "items": [
                        {"sku": "SERUM-NIA-30", "quantity": 2},
                        {"sku": "SUN-SPF50-50", "quantity": 1},
                    ]
                }
            ]
        },
    )

    items: Annotated[list[CheckoutLine], Field(min_length=1, max_length=MAX_LINES)]

    @field_validator("items")
    @classmethod
    def one_line_per_product(cls, items: list[CheckoutLine]) -> list[CheckoutLine]:
        seen: set[str] = set()
        for line in items:
            if line.sku in seen:
                raise ValueError(f"{line.sku} appears on two lines; put each product on one")
            seen.add(line.sku)
        return items

    def fingerprint(self) -> str:
        """Same fingerprint, same request: what an idempotent replay is checked against."""
        canonical = json.dumps(self.model_dump(mode="json"), sort_keys=True)
        return hashlib.sha256(canonical.encode()).hexdigest()
