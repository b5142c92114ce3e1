"""Every e-mail the shop sends about an order, one entry each: the event that sends it,
its kind (how the sent log keys it), its subject and what it carries. Its words are its
two templates, ``templates/<kind>.txt.j2`` and ``templates/<kind>.html.j2``.

A new e-mail is an entry here, a member of :class:`NotificationKind` and its two
templates: the worker subscribes a handler for each entry (``handlers.py``), and the
notifier sends each the same way, once."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from shop.contracts import OrderCancelled, OrderCreated, OrderPaid, OrderPaymentReversed
from shop.contracts.orders import OrderFacts
from shop.notification.domain.kinds import NotificationKind


@dataclass(frozen=True, slots=True)
class OrderEmail:
    kind: NotificationKind
    event: type[OrderFacts]
    handler: str
    """The name of the handler the worker subscribes for it, as its metrics, logs and the
    bus's documents show it."""
    subject: str
    """``{number}`` stands for the order number. Unused for a reversal notice, whose
    subject and templates its reversal decides (``domain/reversals.py``)."""
    invoice: bool = False
    """It carries the order's invoice, as a PDF (of a paid order: its event is
    ``OrderPaid``)."""

    def __post_init__(self) -> None:
        if self.invoice and not issubclass(self.event, OrderPaid):
            raise ValueError(f"{self.handler}: an invoice is of a paid order, not {self.event}")


CONFIRMATION: Final = OrderEmail(
    NotificationKind.ORDER_CONFIRMATION,
    OrderCreated,
    handler="send_order_confirmation",
    subject="Order {number} confirmed",
)
RECEIPT: Final = OrderEmail(
    NotificationKind.PAYMENT_RECEIPT,
    OrderPaid,
    handler="send_payment_receipt",
    subject="Receipt for order {number}",
    invoice=True,
)
CANCELLATION: Final = OrderEmail(
    NotificationKind.ORDER_CANCELLATION,
    OrderCancelled,
    handler="send_cancellation",
    subject="Order {number} cancelled",
)
REVERSAL_NOTICE: Final = OrderEmail(
    NotificationKind.PAYMENT_REVERSAL,
    OrderPaymentReversed,
    handler="send_reversal_notice",
    subject="",
)

EMAILS: Final = (CONFIRMATION, RECEIPT, CANCELLATION, REVERSAL_NOTICE)
