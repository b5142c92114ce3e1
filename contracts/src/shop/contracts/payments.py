"""Events and commands of payment-service."""

from __future__ import annotations

import uuid
from enum import StrEnum
from typing import Annotated

from pydantic import AwareDatetime, StringConstraints

from shop.contracts.base import Command, CurrencyCode, Event, MinorUnits, NonEmptyText

ProviderEventId = Annotated[str, StringConstraints(min_length=1, max_length=200)]


class ReversalKind(StrEnum):
    """How money a gateway took for an order went back."""

    REFUND = "refund"
    """Given back by the shop, or by the gateway on its behalf."""
    CHARGEBACK = "chargeback"
    """Taken back by the customer's bank."""
    VOID = "void"
    """A captured card payment cancelled before it settled: all of it, at once."""


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


class PaymentExpired(Event):
    """The order's payment window (and its grace period) ended with nothing paid at the
    gateway: the order can no longer be paid and is to be cancelled."""

    message_type = "payment.expired"
    message_version = 1

    payment_id: uuid.UUID
    order_id: uuid.UUID
    expired_at: AwareDatetime


class PaymentReversed(Event):
    """Money the gateway took for the order went back, in part or in full: a refund (the
    shop's, or one made at the gateway), a chargeback, a capture voided. One event per
    reversal the gateway lists (``reference``), so two partial refunds are two events."""

    message_type = "payment.reversed"
    message_version = 1

    payment_id: uuid.UUID
    order_id: uuid.UUID
    kind: ReversalKind
    reference: ProviderEventId
    """The gateway's id of this reversal."""
    amount: MinorUnits
    """This reversal's amount."""
    reversed_total: MinorUnits
    """Every reversal of the payment so far, this one included."""
    paid_amount: MinorUnits
    """What the gateway took: the reversal is full once ``reversed_total`` reaches it."""
    currency: CurrencyCode
    reason: NonEmptyText
    reversed_at: AwareDatetime


class ExpirePayment(Command):
    """Expire the order's payment if nothing is paid at the gateway by now: scheduled by
    payment-service, for itself, when it opens the payment (the window's end plus a grace
    period for notifications in flight)."""

    message_type = "payment.expire"
    message_version = 1

    order_id: uuid.UUID


class RefundPayment(Command):
    """Give the money taken for an order that cannot be fulfilled back through its gateway,
    once per ``refund_key`` (the gateway's idempotency key)."""

    message_type = "payment.refund"
    message_version = 1

    payment_id: uuid.UUID
    order_id: uuid.UUID
    amount: MinorUnits
    refund_key: ProviderEventId
    reason: NonEmptyText
