"""The e-mails the shop sends about an order, and what tells one from another: at most one
of each kind per order, except the reversal notices, one per reversal."""

from __future__ import annotations

import hashlib
import re
import uuid
from dataclasses import dataclass
from enum import StrEnum


class NotificationKind(StrEnum):
    ORDER_CONFIRMATION = "order_confirmation"
    PAYMENT_RECEIPT = "payment_receipt"
    ORDER_CANCELLATION = "order_cancellation"
    PAYMENT_REVERSAL = "payment_reversal"
    """A refund, chargeback or void: one per reversal, told apart by its reference."""


PER_REVERSAL = frozenset({NotificationKind.PAYMENT_REVERSAL})
"""The kinds sent once per reversal of the order's payment rather than once per order."""

# Left of the "@" of a Message-ID only some characters may stand (RFC 5322's dot-atom); a
# reference made of these, and not too long, is put there as it is, for a person to read.
_READABLE_REFERENCE = re.compile(r"[A-Za-z0-9_-]{1,64}")


@dataclass(frozen=True, slots=True)
class NotificationKey:
    """Which e-mail this is: an order's one e-mail of ``kind``, or, for a kind sent per
    reversal, the one about the reversal the gateway calls ``reference``."""

    order_id: uuid.UUID
    kind: NotificationKind
    reference: str = ""

    def __post_init__(self) -> None:
        if self.kind in PER_REVERSAL and not self.reference:
            raise ValueError(f"a {self.kind.value} e-mail needs the reversal's reference")
        if self.kind not in PER_REVERSAL and self.reference:
            raise ValueError(f"a {self.kind.value} e-mail is one per order, with no reference")

    def message_id(self, domain: str) -> str:
        """The e-mail's Message-ID: the same for every sending of this e-mail, so that a rare
        duplicate is recognisable; unique within the sender's ``domain``."""
        if not self.reference:
            return f"<{self.kind.value}.{self.order_id}@{domain}>"
        return f"<{self.kind.value}.{self.order_id}.{_reference_token(self.reference)}@{domain}>"


def _reference_token(reference: str) -> str:
    if _READABLE_REFERENCE.fullmatch(reference):
        return reference
    # Any other reference (a dot, a space, 500 characters) by its digest: "=" is allowed in
    # a Message-ID but never in a readable reference, so the two forms cannot collide.
    return "sha256=" + hashlib.sha256(reference.encode()).hexdigest()[:32]
