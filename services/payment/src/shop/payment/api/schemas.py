"""The notifications as each gateway sends them, validated after their signature."""

from __future__ import annotations

import uuid
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

from shop.payment.domain.notifications import MAX_AMOUNT
from shop.web.inputs import WHOLE_NUMBER

PRINTABLE = r"^[^\x00-\x1f\x7f]+$"
"""Text without control characters: no id or status a gateway sends has one, and the
database cannot store a NUL (U+0000) in a text column."""

EventId = Annotated[str, StringConstraints(min_length=1, max_length=200, pattern=r"^[\x21-\x7e]+$")]
Text = Annotated[str, StringConstraints(min_length=1, max_length=200, pattern=PRINTABLE)]


class ShopPaymentData(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    # Strict everywhere but here: JSON can only bring a UUID as text.
    order_id: Annotated[uuid.UUID, Field(strict=False)]
    amount: Annotated[int, Field(ge=0, le=MAX_AMOUNT), WHOLE_NUMBER]
    currency: Annotated[str, StringConstraints(pattern=r"^[A-Z]{3}$")]
    provider_payment_id: Text


class ShopNotification(BaseModel):
    """The shop's own format, signed in the ``Payment-Signature`` header."""

    model_config = ConfigDict(
        extra="forbid",
        strict=True,
        json_schema_extra={
            "examples": [
                {
                    "event_id": "evt_3f9a1c2b",
                    "type": "payment.paid",
                    "created": 1796287800,
                    "data": {
                        "order_id": "6f1c2a4e-8d3b-4c1a-9e2f-0a1b2c3d4e5f",
                        "amount": 178000,
                        "currency": "IDR",
                        "provider_payment_id": "pay_81c2",
                    },
                }
            ]
        },
    )

    event_id: EventId
    type: Literal["payment.paid", "payment.failed", "payment.refunded", "payment.charged_back"]
    created: Annotated[int, Field(ge=0), WHOLE_NUMBER]
    data: ShopPaymentData


def _midtrans_text(max_length: int) -> StringConstraints:
    return StringConstraints(min_length=1, max_length=max_length, pattern=PRINTABLE)


class MidtransNotification(BaseModel):
    """Midtrans' HTTP notification (the fields the shop reads; Midtrans sends more, which are
    kept in the raw body and otherwise ignored)."""

    model_config = ConfigDict(
        extra="allow",
        strict=True,
        json_schema_extra={
            "examples": [
                {
                    "transaction_time": "2026-12-03 16:30:00",
                    "transaction_status": "settlement",
                    "transaction_id": "9aed5972-5b6a-401e-894b-a32c91ed1a3a",
                    "status_code": "200",
                    # Signed with the development server key (SB-Mid-server-development-only).
                    "signature_key": "cc197deef5fa7f5390eb48bfe1f00ef28628a58c98855b3f6b034f"
                    "013212fb75e461d3c0174a3408b9ba358eac63abbc83e636e82e0acec652d986321549856f",
                    "payment_type": "bank_transfer",
                    "order_id": "6f1c2a4e-8d3b-4c1a-9e2f-0a1b2c3d4e5f",
                    "gross_amount": "178000.00",
                    "currency": "IDR",
                    "fraud_status": "accept",
                }
            ]
        },
    )

    # Kept as sent: the signature is computed over the text, not over a parsed UUID.
    order_id: Annotated[str, _midtrans_text(200)]
    status_code: Annotated[str, StringConstraints(pattern=r"^[0-9]{3}$")]
    gross_amount: Annotated[str, StringConstraints(min_length=1, max_length=32)]
    signature_key: Annotated[
        str,
        StringConstraints(pattern=r"^[0-9a-fA-F]{128}$"),
        Field(description="Hex SHA-512 of order_id + status_code + gross_amount + server key."),
    ]
    # Bounded so that the event id (transaction_id:status:fraud_status) fits its column.
    transaction_id: Annotated[str, _midtrans_text(64)]
    transaction_status: Annotated[str, _midtrans_text(32)]
    fraud_status: Annotated[str, _midtrans_text(32)] | None = None
    currency: Annotated[str, StringConstraints(pattern=r"^[A-Z]{3}$")] = "IDR"
