"""What order-service says it sends and receives (``shop.order.bus``, the source of its
AsyncAPI document) against what it does: the use cases write exactly the declared messages
to the outbox, and the documented router is the one the worker runs."""

from __future__ import annotations

import uuid

import structlog

from shop.contracts import PaymentReceived
from shop.messaging.testing import outline
from shop.order.bootstrap import build_worker
from shop.order.bus import PUBLISHES, describe
from shop.order.domain.customer import Customer
from shop.order.service_layer.cancellation import cancel_order, cancel_unpaid
from shop.order.settings import OrderSettings

from .fakes import FakeDatabase, FakeOrders
from .test_payments import handle, payment
from .test_reversal_handling import reversal

AYU = Customer(id="cust_ayu", email="ayu@example.com")


async def placed(database: FakeDatabase) -> uuid.UUID:
    answer = await database.checkout(AYU, ("SERUM-NIA-30", 1), key=str(uuid.uuid4()))
    return answer.order_id


async def test_the_use_cases_write_to_the_outbox_exactly_what_order_service_declares() -> None:
    database = FakeDatabase()
    paid, cancelled, expired = [await placed(database) for _ in range(3)]

    await handle(database, payment(paid))
    await handle(database, reversal(paid))
    await cancel_order(database.stores().orders, AYU, cancelled)
    await cancel_unpaid(FakeOrders(database), expired, structlog.get_logger())

    written = [*database.state.outbox, *(message for _, message in database.state.scheduled)]
    assert {type(message) for message in written} == set(PUBLISHES)


def test_the_documented_router_is_the_one_the_worker_runs() -> None:
    worker = build_worker(OrderSettings(environment="test", log_json=False), health_port=None)

    documented = describe()

    assert outline(pipeline.router for pipeline in worker.pipelines) == outline(documented.routers)
    assert PaymentReceived in {s.contract for router in documented.routers for s in router}
