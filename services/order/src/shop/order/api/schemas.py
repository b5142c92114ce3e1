"""Request bodies, validated before any database work."""

from __future__ import annotations

import hashlib
import json
from typing import Annotated, Self

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, model_validator

from shop.order.domain.money import MAX_LINE_QUANTITY

MAX_LINES = 50


class CheckoutLine(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    sku: Annotated[
        str, StringConstraints(min_length=1, max_length=64, pattern=r"^[A-Z0-9][A-Z0-9-]*$")
    ]
    quantity: Annotated[int, Field(ge=1, le=MAX_LINE_QUANTITY)]


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

    @model_validator(mode="after")
    def one_line_per_product(self) -> Self:
        seen: set[str] = set()
        for line in self.items:
            if line.sku in seen:
                raise ValueError(f"{line.sku} appears on two lines; put each product on one")
            seen.add(line.sku)
        return self

    def fingerprint(self) -> str:
        """Same fingerprint, same request: what an idempotent replay is checked against."""
        canonical = json.dumps(self.model_dump(mode="json"), sort_keys=True)
        return hashlib.sha256(canonical.encode()).hexdigest()
