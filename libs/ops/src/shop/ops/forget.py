"""Forgetting one customer, on their request, in every service's store, through each
service's internal API (never its tables): payment-service erases the gateways' bodies about
their orders, notification-service the address its records of sent e-mails keep, and
order-service, last, the address and the customer's id its orders and outbox keep (the
orders themselves, their lines, totals and states, stay for the shop's books). Each also
forgets the customer in its dead letters about those orders.

order-service goes last because its orders are how the customer's orders are found: a run
cut short (a service that did not answer) is run again, and finds them still. It forgets
only the orders the others were asked about, and names those placed since (a customer still
shopping): they are forgotten in another round, the other services first. Each service
changes only what still names the customer, so a second run changes nothing and says so.

A dead letter naming the customer is rewritten as the outbox's messages are, so that it can
still be redriven; one that cannot be read as a contract loses its body, and says so. A
message still on its way when the customer is forgotten (waiting out a retry, or on the
broker's dead-letter topic or queue until its worker collects it) names them still when it
lands: forget them again once the shop's retries have run out (a second run finds the
orders by the ids it was given, not by the address, which no order names any more)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

from shop.messaging.internal import CUSTOMER_ORDERS_PATH, FORGET_CUSTOMER_PATH
from shop.ops.errors import OpsError
from shop.ops.internal import OperatorPort, in_parts, operator_port
from shop.ops.settings import NOTIFICATION_SERVICE, ORDER_SERVICE, PAYMENT_SERVICE, OpsSettings

ROUNDS: Final = 5
"""Rounds of forgetting before giving up on a customer who keeps placing orders meanwhile
(each round forgets the orders placed during the one before)."""


@dataclass(frozen=True, slots=True)
class ForgottenCustomer:
    """What each service changed, in rows, by service and by what it keeps."""

    orders: int
    """The customer's orders anonymised in order-service (rows changed)."""
    changed: dict[str, dict[str, int]]


async def forget_customer(settings: OpsSettings, email: str) -> ForgottenCustomer:
    """Erase or anonymise the customer of ``email`` in every service's store."""
    if settings.operator_token is None:
        # Every service's routes are open without one in development: an erasure, which
        # cannot be undone, is still asked with the operator's token only.
        raise OpsError(
            "forgetting a customer needs the operator token: set SHOP_OPS_OPERATOR_TOKEN"
        )
    async with (
        operator_port(settings, ORDER_SERVICE) as orders,
        operator_port(settings, PAYMENT_SERVICE) as payments,
        operator_port(settings, NOTIFICATION_SERVICE) as notifications,
    ):
        return await forget_through(orders, payments, notifications, email.strip())


async def forget_through(
    orders: OperatorPort, payments: OperatorPort, notifications: OperatorPort, email: str
) -> ForgottenCustomer:
    """:func:`forget_customer` through the services' ports: rounds of the orders listed,
    until order-service has none left naming the address."""
    changed: dict[str, dict[str, int]] = {
        PAYMENT_SERVICE: {"gateway_notifications": 0, "dead_letters": 0},
        NOTIFICATION_SERVICE: {},
        ORDER_SERVICE: {},
    }
    order_ids = (await orders.post(CUSTOMER_ORDERS_PATH, body={"email": email}))["order_ids"]
    for _ in range(ROUNDS):
        for part in in_parts(order_ids):
            _add(
                changed[PAYMENT_SERVICE],
                await payments.post(FORGET_CUSTOMER_PATH, body={"email": email, "order_ids": part}),
            )
        for part in in_parts(order_ids) or [""]:
            _add(
                changed[NOTIFICATION_SERVICE],
                await notifications.post(
                    FORGET_CUSTOMER_PATH, body={"email": email, "order_ids": part}
                ),
            )
        remaining: list[str] = []
        for part in in_parts(order_ids) or [""]:
            answer = await orders.post(
                FORGET_CUSTOMER_PATH, body={"email": email, "order_ids": part}
            )
            _add(changed[ORDER_SERVICE], answer)
            remaining = answer["remaining_order_ids"]
        if not remaining:
            return ForgottenCustomer(
                orders=changed[ORDER_SERVICE].get("orders", 0), changed=changed
            )
        # Orders placed since the list was taken: the other services forget them first.
        order_ids = remaining
    raise OpsError(
        f"the customer still placed orders while being forgotten ({len(order_ids)} left "
        f"after {ROUNDS} rounds): run forget-customer again once they have stopped"
    )


def _add(total: dict[str, int], answer: dict[str, Any]) -> None:
    for what, rows in answer["changed"].items():
        total[what] = total.get(what, 0) + rows
