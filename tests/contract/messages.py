"""The messages the shop's pacts are about, each named once: a consumer states what it needs
of a message under this name, and its producer answers the name with the message its code
builds. A name a producer does not know fails its verification."""

from __future__ import annotations

from typing import Final

ORDER_PLACED: Final = "an order placed at checkout (order.created v1)"
ORDER_PAID: Final = "a pending order paid (order.paid v1)"
ORDER_CANCELLED_UNPAID: Final = "an order cancelled unpaid (order.cancelled v1)"
ORDER_PAYMENT_REFUNDED_IN_PART: Final = (
    "a paid order's payment refunded in part (order.payment_reversed v1)"
)
PAYMENT_RECEIVED: Final = "a payment received for a pending order (payment.received v1)"
PAYMENT_EXPIRED: Final = "an unpaid order's payment expired (payment.expired v1)"
PAYMENT_REFUNDED_IN_PART: Final = "a paid order's payment refunded in part (payment.reversed v1)"
NOTIFICATION_TO_PROCESS: Final = "a gateway notification kept for processing (payment.process v1)"

ORDER_SERVICE: Final = "order-service"
PAYMENT_SERVICE: Final = "payment-service"
NOTIFICATION_SERVICE: Final = "notification-service"
"""The pacts' parties: each service by the name it consumes under (its consumer group), which
is also the name it publishes under."""
