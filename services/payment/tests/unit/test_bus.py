"""payment-service's documented router (``shop.payment.bus``, the source of its AsyncAPI
document) is the one its worker runs. What it publishes is checked against the outbox in
``tests/integration/test_worker.py``."""

from __future__ import annotations

from shop.messaging.testing import outline
from shop.payment.bootstrap import build_worker
from shop.payment.bus import describe
from shop.payment.settings import PaymentSettings


def test_the_documented_router_is_the_one_the_worker_runs() -> None:
    settings = PaymentSettings(environment="test", log_json=False)
    worker = build_worker(settings, health_port=None)

    assert outline(pipeline.router for pipeline in worker.pipelines) == outline(describe().routers)
