"""An order's timeline when a service cannot be asked: what the others answered, and an
entry that names the service that did not and why; only when none answers does it fail.
The services are stand-ins serving hand-written answers on the paths the workers serve."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any

import pytest
from pydantic import SecretStr

from shop.devstack.ports import free_port
from shop.messaging import OperatorRoute
from shop.messaging.testing import operator_port
from shop.ops.errors import OpsError
from shop.ops.settings import OpsSettings
from shop.ops.timeline import order_timeline

TOKEN = "an-operator-token-of-this-test-long-enough"
ORDER = uuid.uuid4()
EVENT = uuid.uuid4()


def answering(body: dict[str, Any]) -> Any:
    async def answer(_: Mapping[str, str]) -> tuple[int, Any]:
        return 200, body

    return answer


ORDER_SERVICE_ROUTES = [
    OperatorRoute(
        "GET",
        "/internal/v1/orders/{reference}",
        answering(
            {
                "order": {
                    "id": str(ORDER),
                    "number": "SK-7KQ4-M2XD",
                    "total": 250_000,
                    "currency": "IDR",
                    "customer_email": "ayu@example.com",
                    "status": "pending",
                    "created_at": "2026-12-03T09:30:00+00:00",
                    "paid_at": None,
                    "payment_id": None,
                    "cancelled_at": None,
                },
                "payment_conflicts": [],
            }
        ),
    ),
    OperatorRoute(
        "GET",
        "/internal/v1/outbox/messages",
        answering(
            {
                "key": str(ORDER),
                "messages": [
                    {
                        "event_id": str(EVENT),
                        "message_type": "order.created",
                        "created_at": "2026-12-03T09:30:00+00:00",
                        "published_at": "2026-12-03T09:30:01+00:00",
                        "due_at": None,
                    }
                ],
            }
        ),
    ),
    OperatorRoute("GET", "/internal/v1/inbox", answering({"handled": []})),
    OperatorRoute("GET", "/internal/v1/dead-letters", answering({"dead_letters": []})),
]
NOTIFICATION_SERVICE_ROUTES = [
    OperatorRoute("GET", "/internal/v1/orders/{order_id}/emails", answering({"emails": []})),
    OperatorRoute("GET", "/internal/v1/dead-letters", answering({"dead_letters": []})),
]


def closed_port() -> str:
    return f"http://127.0.0.1:{free_port()}"


def settings(order: str, payment: str, notification: str) -> OpsSettings:
    return OpsSettings(
        environment="test",
        order_worker_url=order,
        payment_worker_url=payment,
        notification_worker_url=notification,
        operator_token=SecretStr(TOKEN),
    )


async def test_a_service_that_cannot_be_asked_is_named_beside_what_the_others_answered() -> None:
    payment_down = closed_port()
    async with (
        operator_port(ORDER_SERVICE_ROUTES, token=TOKEN) as order,
        operator_port(NOTIFICATION_SERVICE_ROUTES, token=TOKEN) as notification,
    ):
        timeline = await order_timeline(settings(order, payment_down, notification), ORDER)

    whats = [entry.what for entry in timeline]
    assert whats[:3] == [
        "order placed",
        "order.created added to the outbox",
        "order.created published",
    ]
    [unasked] = [entry for entry in timeline if entry.service == "payment-service"]
    assert unasked.what == "payment-service could not be asked"
    assert unasked.detail.startswith(f"cannot reach payment-service's worker at {payment_down}")
    assert unasked is timeline[-1]  # asked after everything it could have said


async def test_when_no_service_answers_the_timeline_fails_with_the_first_reason() -> None:
    down = closed_port()
    with pytest.raises(OpsError, match="cannot reach order-service's worker"):
        await order_timeline(settings(down, down, down), ORDER)


async def test_a_tracing_backend_that_cannot_be_asked_is_named_beside_what_the_services_said() -> (
    None
):
    async with (
        operator_port(ORDER_SERVICE_ROUTES, token=TOKEN) as order,
        operator_port(NOTIFICATION_SERVICE_ROUTES, token=TOKEN) as notification,
    ):
        given = settings(order, closed_port(), notification)
        given = given.model_copy(update={"tracing_url": closed_port()})
        timeline = await order_timeline(given, ORDER)

    assert timeline[0].what == "order placed"
    assert "tracing backend could not be asked" in [entry.what for entry in timeline]
