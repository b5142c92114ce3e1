"""Forgetting one customer, on their request, in every service's store, through each
service's internal API (never its tables): payment-service erases the gateways' bodies about
their orders, notification-service the address its records of sent e-mails keep, and
order-service, last, the address and the customer's id its orders and outbox keep (the
orders themselves, their lines, totals and states, stay for the shop's books).

order-service goes last because its orders are how the customer's orders are found: a run
cut short (a service that did not answer) is run again, and finds them still. Each service
changes only what still names the customer, so a second run changes nothing and says so.

Dead letters are not among the stores asked: a dead letter keeps a message byte for byte
until a person redrives or purges it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from shop.messaging.internal import FORGET_CUSTOMER_PATH
from shop.ops.errors import OpsError
from shop.ops.internal import in_parts, operator_port
from shop.ops.settings import NOTIFICATION_SERVICE, ORDER_SERVICE, PAYMENT_SERVICE, OpsSettings

CUSTOMER_ORDERS_PATH: Final = "/internal/v1/customers/orders"


@dataclass(frozen=True, slots=True)
class ForgottenCustomer:
    """What each service changed, in rows, by service and by what it keeps."""

    orders: int
    """The customer's orders found (and anonymised) in order-service."""
    changed: dict[str, dict[str, int]]


async def forget_customer(settings: OpsSettings, email: str) -> ForgottenCustomer:
    """Erase or anonymise the customer of ``email`` in every service's store."""
    if settings.operator_token is None:
        # Every service's routes are open without one in development: an erasure, which
        # cannot be undone, is still asked with the operator's token only.
        raise OpsError(
            "forgetting a customer needs the operator token: set SHOP_OPS_OPERATOR_TOKEN"
        )
    email = email.strip()
    async with operator_port(settings, ORDER_SERVICE) as orders:
        order_ids = (await orders.get(CUSTOMER_ORDERS_PATH, {"email": email}))["order_ids"]
        changed: dict[str, dict[str, int]] = {PAYMENT_SERVICE: {"gateway_notifications": 0}}
        async with operator_port(settings, PAYMENT_SERVICE) as payments:
            for part in in_parts(order_ids):
                answer = await payments.post(FORGET_CUSTOMER_PATH, {"order_ids": part})
                for what, rows in answer["changed"].items():
                    changed[PAYMENT_SERVICE][what] = changed[PAYMENT_SERVICE].get(what, 0) + rows
        async with operator_port(settings, NOTIFICATION_SERVICE) as notifications:
            answer = await notifications.post(FORGET_CUSTOMER_PATH, {"email": email})
            changed[NOTIFICATION_SERVICE] = answer["changed"]
        answer = await orders.post(FORGET_CUSTOMER_PATH, {"email": email})
        changed[ORDER_SERVICE] = answer["changed"]
    return ForgottenCustomer(orders=len(order_ids), changed=changed)
