"""Midtrans' HTTP notification: ``signature_key`` is the hex SHA-512 of ``order_id +
status_code + gross_amount + server key``; ``transaction_status`` (with ``fraud_status``
for card captures) says what happened. Midtrans notifies several times per transaction, so
an event is its ``transaction_id`` together with its status (and, for a refund or a
chargeback, which may come several times, a digest of the body).

Nothing here moves money: a notification only tells the worker to ask Midtrans' status API,
and the worker acts on that answer (``signature_key`` covers neither the status nor the
transaction id)."""

from __future__ import annotations

import hashlib
import hmac
from decimal import Decimal, InvalidOperation

from shop.payment.domain.errors import InvalidNotification, InvalidSignature
from shop.payment.domain.notifications import MAX_AMOUNT, Meaning

_MEANINGS = {
    "settlement": Meaning.PAID,
    "pending": Meaning.PENDING,
    # A card authorised and held, not captured: nothing is taken until the capture.
    "authorize": Meaning.PENDING,
    "deny": Meaning.FAILED,
    "cancel": Meaning.FAILED,
    "expire": Meaning.FAILED,
    "failure": Meaning.FAILED,
    "refund": Meaning.REFUNDED,
    "partial_refund": Meaning.REFUNDED,
    "chargeback": Meaning.CHARGED_BACK,
    "partial_chargeback": Meaning.CHARGED_BACK,
}

REVERSAL_STATUSES = frozenset({"refund", "partial_refund", "chargeback", "partial_chargeback"})
"""Statuses a transaction can reach more than once: every partial refund or chargeback is
notified with the same transaction id and status."""


def signature_key(order_id: str, status_code: str, gross_amount: str, server_key: str) -> str:
    """What Midtrans puts in ``signature_key`` of a genuine notification."""
    return hashlib.sha512(f"{order_id}{status_code}{gross_amount}{server_key}".encode()).hexdigest()


def verify(
    signature: str, *, order_id: str, status_code: str, gross_amount: str, server_key: str
) -> None:
    expected = signature_key(order_id, status_code, gross_amount, server_key).encode()
    # As bytes: compare_digest refuses text with any non-ASCII character (a TypeError).
    sent = signature.lower().encode("utf-8", "replace")
    if not hmac.compare_digest(sent, expected):
        raise InvalidSignature("the signature_key does not match the notification")


PAID_STATUS_CODE = "200"


def meaning(transaction_status: str, fraud_status: str | None, status_code: str) -> Meaning:
    """A card ``capture`` pays only once Midtrans' fraud check accepted it. The signature
    covers ``status_code`` but not the status itself, so a notification that says paid
    must carry Midtrans' success code: a signed pending (201) or denial (202) cannot be
    turned into a settlement by editing its status."""
    found = _meaning(transaction_status, fraud_status)
    if found == Meaning.PAID and status_code != PAID_STATUS_CODE:
        raise InvalidNotification(
            f"transaction_status {transaction_status!r} with status_code {status_code!r}: "
            f"a payment Midtrans confirms carries {PAID_STATUS_CODE}"
        )
    return found


def _meaning(transaction_status: str, fraud_status: str | None) -> Meaning:
    if transaction_status == "capture":
        if fraud_status == "deny":
            return Meaning.FAILED
        # "challenge": Midtrans holds the capture for review; it notifies again after.
        return Meaning.PAID if fraud_status == "accept" else Meaning.PENDING
    try:
        return _MEANINGS[transaction_status]
    except KeyError:
        raise InvalidNotification(f"unknown transaction_status {transaction_status!r}") from None


def whole_rupiah(gross_amount: str) -> int:
    """``"250000.00"`` → ``250000``: Rupiah has no minor unit, so a fraction is refused, and
    so is an amount over :data:`MAX_AMOUNT`."""
    try:
        amount = Decimal(gross_amount)
    except InvalidOperation:
        raise InvalidNotification(f"gross_amount {gross_amount!r} is not a number") from None
    if not amount.is_finite() or amount < 0 or amount != amount.to_integral_value():
        raise InvalidNotification(f"gross_amount {gross_amount!r} is not a whole Rupiah amount")
    # Compared before int(): "1e999999999" is a short text for an integer of a billion digits.
    if amount > MAX_AMOUNT:
        raise InvalidNotification(f"gross_amount {gross_amount!r} is more than {MAX_AMOUNT} Rupiah")
    return int(amount)
