"""What notification-service says it sends and receives (``shop.notification.bus``, the
source of its AsyncAPI document) against what it is: it publishes nothing, having no
outbox and no relay, and the documented router is the one the worker runs."""

from __future__ import annotations

from shop.messaging.testing import outline
from shop.notification.adapters.tables import metadata
from shop.notification.bootstrap import build_worker
from shop.notification.bus import PUBLISHES, describe
from shop.notification.settings import NotificationSettings


def worker_settings() -> NotificationSettings:
    return NotificationSettings(environment="test", log_json=False)


def test_it_declares_nothing_published_having_no_outbox_and_no_relay() -> None:
    worker = build_worker(worker_settings(), health_port=None)

    assert PUBLISHES == ()
    assert "outbox" not in metadata.tables
    assert worker.relay is None


def test_the_documented_router_is_the_one_the_worker_runs() -> None:
    worker = build_worker(worker_settings(), health_port=None)

    assert outline(pipeline.router for pipeline in worker.pipelines) == outline(describe().routers)
