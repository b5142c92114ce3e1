"""Events and commands of payment-service."""

from __future__ import annotations

import uuid
from typing import Annotated

from pydantic import AwareDatetime, StringConstraints

from shop.contracts.base import Command, CurrencyCode, Event, MinorUnits, NonEmptyText

ProviderEventId = Annotated[str, StringConstraints(min_length=1, max_length=200)]


class PaymentReceived(Event):
    """The gateway confirmed a payment that matches its order's amount and currency."""

    message_type = "payment.received"
    message_version = 1

    payment_id: uuid.UUID
    order_id: uuid.UUID
    provider_event_id: ProviderEventId
    amount: MinorUnits
    currency: CurrencyCode
    paid_at: AwareDatetime


class PaymentFailed(Event):
    """The gateway reported a failed payment, or the payment could not be applied."""

    message_type = "payment.failed"
    message_version = 1

    payment_id: uuid.UUID
    order_id: uuid.UUID
    provider_event_id: ProviderEventId
    reason: NonEmptyText
    failed_at: AwareDatetime


class ProcessPayment(Command):
    """Apply the stored gateway webhook event with this provider event id."""

    message_type = "payment.process"
    message_version = 1

    provider_event_id: ProviderEventId
    provider: NonEmptyText | None = None
    """The gateway whose event it is (``shop``, ``midtrans``): ids are unique per gateway.
    Absent in commands sent before it was added, which meant the shop's own format."""
