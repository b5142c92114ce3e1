"""The notification worker as a process: a SIGTERM in the middle of a send loses nothing.
The send that did not finish within the drain timeout is not acknowledged, so the next
worker sends it, once."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from typing import Any

from shop.contracts import OrderCreated
from shop.devstack import SmtpSink
from shop.devstack.ports import free_port
from shop.devstack.testing import wait_for_line
from shop.messaging.testing import eventually
from shop.notification.settings import NotificationSettings


def worker_env(settings: NotificationSettings, health_port: int, **extra: str) -> dict[str, str]:
    kafka = settings.messaging.kafka
    return {
        **os.environ,
        "SHOP_NOTIFICATION_ENVIRONMENT": "test",
        "SHOP_NOTIFICATION_DATABASE_URL": settings.database_url,
        "SHOP_NOTIFICATION_SMTP__HOST": settings.smtp.host,
        "SHOP_NOTIFICATION_SMTP__PORT": str(settings.smtp.port),
        "SHOP_NOTIFICATION_WORKER_HEALTH_PORT": str(health_port),
        "SHOP_NOTIFICATION_LOG_JSON": "true",
        "SHOP_NOTIFICATION_MESSAGING__TRANSPORT": "kafka",
        "SHOP_NOTIFICATION_MESSAGING__NAMESPACE": settings.messaging.namespace,
        "SHOP_NOTIFICATION_MESSAGING__TIME_SCALE": "0.01",
        "SHOP_NOTIFICATION_MESSAGING__KAFKA__BOOTSTRAP_SERVERS": kafka.bootstrap_servers,
        "SHOP_NOTIFICATION_MESSAGING__KAFKA__PARTITIONS": str(kafka.partitions),
        "SHOP_NOTIFICATION_MESSAGING__KAFKA__SESSION_TIMEOUT_MS": str(kafka.session_timeout_ms),
        **extra,
    }


def start_worker(env: dict[str, str]) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "shop.notification.worker"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def wait_until_ready(port: int, within: float = 60) -> None:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=2) as reply:
                if reply.status == 200:
                    return
        except (urllib.error.URLError, OSError):
            pass
        time.sleep(0.2)
    raise AssertionError(f"the worker on health port {port} never became ready")


def stop(process: subprocess.Popen[str]) -> None:
    if process.poll() is None:
        process.kill()
        process.wait()


async def test_sigterm_in_the_middle_of_a_send_does_not_lose_the_email(
    notification_settings: NotificationSettings,
    bus: Any,
    order_event: Any,
    smtp_sink: SmtpSink,
    recorded: Any,
) -> None:
    order = order_event(OrderCreated)
    first_port, second_port = free_port(), free_port()
    slow = {
        "SHOP_NOTIFICATION_FAULTS__ENABLED": "true",
        "SHOP_NOTIFICATION_FAULTS__MIN_LATENCY": "5",
        "SHOP_NOTIFICATION_FAULTS__MAX_LATENCY": "5",
        "SHOP_NOTIFICATION_MESSAGING__DRAIN_TIMEOUT": "0.5",
    }
    first = start_worker(worker_env(notification_settings, first_port, **slow))
    try:
        wait_until_ready(first_port)
        await bus.publish(order)
        wait_for_line(first, "sending e-mail")
        first.send_signal(signal.SIGTERM)
        assert first.wait(timeout=30) == 0
    finally:
        stop(first)
    assert smtp_sink.messages == [], "the send was cut short by the drain timeout"
    assert await recorded() == []

    second = start_worker(worker_env(notification_settings, second_port))
    try:
        [mail] = await smtp_sink.wait_for_async(1, within=90)

        async def marked_sent() -> bool:
            return await recorded() == [(order.payload.order_id, "order_confirmation")]

        await eventually(marked_sent, within=30, what="the e-mail to be recorded")
        second.send_signal(signal.SIGTERM)
        assert second.wait(timeout=30) == 0
    finally:
        stop(second)
    assert mail.subject == f"Order {order.payload.order_number} confirmed"
    assert len(smtp_sink.messages) == 1
