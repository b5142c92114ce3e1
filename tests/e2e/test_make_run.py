"""What ``make run`` starts, driven as a person would, on either bus: the shop comes up on
embedded infrastructure, takes 20 orders over HTTP, the gateway pays each, every order gets
its confirmation and its receipt, one order's trace crosses four processes, ``shopctl
demo``'s traffic completes (on SQS against a slow provider failing 30 % of sends, whose
retries an order's timeline shows), and SIGTERM stops it all without orphans."""

from __future__ import annotations

import asyncio
import email
import email.policy
import functools
import json
import os
import subprocess
import sys
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from shop.messaging.tracing import MESSAGE_KEY, RETRY_SCHEDULED, read_spans
from shop.ops.demo import run_demo
from shop.ops.settings import OpsSettings

from .shop_stack import RunningShop, http, running_shop, until

ORDERS = 20
TRACE_ID = "5e1f" * 8
SKUS = ["SUN-SPF50-50", "SERUM-NIA-30", "CLEANSER-GEL-150", "MOIST-GEL-50"]


def subjects(mail_dir: Path) -> Counter[str]:
    """How many e-mails of each subject the SMTP sink kept."""
    found: Counter[str] = Counter()
    for path in mail_dir.glob("*.eml"):
        message = email.message_from_bytes(path.read_bytes(), policy=email.policy.default)
        found[str(message["Subject"])] += 1
    return found


# Each bus runs the whole story on one stack (starting one costs half a minute): 20 orders
# driven by hand, one order's trace, then shopctl demo's traffic. On SQS the provider is
# slow and fails 30 % of sends during the demo, with retries 20 times sooner (2 s becomes
# 0.1 s), so that a send failing six times in a row still ends well within the demo's wait,
# as it would within minutes at full scale.
BUSES = [("kafka", 200, None), ("sqs", 100, 0.3)]
SCALED_RETRIES = {"SHOP_NOTIFICATION_MESSAGING__TIME_SCALE": "0.05"}


@pytest.mark.parametrize(("transport", "demo_orders", "email_failure"), BUSES)
def test_make_runs_shop_takes_orders_traces_them_and_completes_shopctl_demo(
    tmp_path: Path,
    transport: str,
    demo_orders: int,
    email_failure: float | None,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with running_shop(tmp_path / "stack", transport, SCALED_RETRIES) as shop:
        twenty_orders_are_paid_and_each_gets_both_emails(shop)
        one_orders_trace_crosses_four_processes(shop)
        monkeypatch.setenv("SHOP_OPS_ENV_FILE", str(shop.workdir / "shop.env"))
        shopctl_demo_completes_every_order(shop, demo_orders, email_failure)
        if email_failure:
            a_retried_orders_timeline_shows_its_retries(shop)


def twenty_orders_are_paid_and_each_gets_both_emails(shop: RunningShop) -> None:
    assert "try:" in shop.banner, "the banner gives commands to try"
    status, products = http("GET", f"{shop.order_api}/v1/products")
    assert status == 200
    assert set(SKUS) <= {product["sku"] for product in json.loads(products)}
    token = shop.customer_token()
    with ThreadPoolExecutor(max_workers=4) as pool:
        orders = list(pool.map(lambda n: shop.checkout(token, SKUS[n % len(SKUS)]), range(ORDERS)))
    assert len({order["id"] for order in orders}) == ORDERS

    for order in orders:
        until(functools.partial(shop.gateway_pays, order), f"the gateway to pay {order['number']}")
    until(
        lambda: all(shop.order_status(token, order) == "paid" for order in orders),
        "every order to read paid",
    )

    def both_emails_each() -> bool:
        seen = subjects(shop.mail_dir)
        return all(
            seen[f"Order {order['number']} confirmed"] >= 1
            and seen[f"Receipt for order {order['number']}"] >= 1
            for order in orders
        )

    until(both_emails_each, "a confirmation and a receipt for every order", within=120)
    seen = subjects(shop.mail_dir)
    duplicates = {subject: n for subject, n in seen.items() if n > 1}
    assert duplicates == {}, "each e-mail is sent once"


def one_orders_trace_crosses_four_processes(shop: RunningShop) -> None:
    """Begun by the frontend's traceparent, it reads request → send → process in each of
    the consuming workers."""
    token = shop.customer_token()
    traced = shop.checkout(token, SKUS[0], traceparent=f"00-{TRACE_ID}-{'1' * 16}-01")

    def processes_in_trace() -> set[tuple[str, int]]:
        spans = read_spans(shop.workdir / "traces", trace_id=TRACE_ID)
        return {(span.service, span.pid) for span in spans if span.pid is not None}

    until(lambda: len(processes_in_trace()) >= 4, f"{traced['number']}'s trace in 4 processes")
    spans = read_spans(shop.workdir / "traces", trace_id=TRACE_ID)
    services = {span.service for span in spans}
    assert {"order-service", "notification-service", "payment-service"} <= services
    by_id = {span.span_id: span for span in spans}
    consumers = [span for span in spans if span.kind == "CONSUMER"]
    assert consumers
    for consumer in consumers:
        parent = by_id.get(consumer.parent_span_id or "")
        assert parent is not None, f"{consumer.name}'s parent is in the trace"
        assert parent.kind == "PRODUCER", f"{consumer.name} is a child of the relay's send"


def shopctl_demo_completes_every_order(
    shop: RunningShop, orders: int, email_failure: float | None
) -> None:
    summary = asyncio.run(
        run_demo(
            OpsSettings(),
            orders=orders,
            concurrency=16,
            email_failure=email_failure,
            email_latency=(0.05, 0.3) if email_failure else None,
            within=240,
        )
    )
    assert summary.complete, summary.problems
    assert (summary.placed, summary.paid) == (orders, orders)
    assert (summary.confirmations, summary.receipts) == (orders, orders)
    assert summary.dead_letters == 0
    if email_failure:
        assert summary.retries > 0, "the failing provider made the worker retry"
    assert summary.checkout is not None
    assert summary.checkout.count == orders
    # The command itself, as a person runs it: exit 0 and a summary to read.
    command = shopctl(shop, "demo", "--orders", "10", "--json")
    assert json.loads(command)["paid"] == 10


def a_retried_orders_timeline_shows_its_retries(shop: RunningShop) -> None:
    retried = [
        span
        for span in read_spans(shop.workdir / "traces")
        if any(event.name == RETRY_SCHEDULED for event in span.events)
    ]
    assert retried, "the failing provider's retries are in the traces"
    order = str(retried[0].attributes[MESSAGE_KEY])
    timeline = json.loads(shopctl(shop, "timeline", order, "--json"))
    whats = [entry["what"] for entry in timeline]
    assert any(what.endswith("failed, retry scheduled") for what in whats), whats
    assert any(what.startswith("e-mail sent") for what in whats), whats


def shopctl(shop: RunningShop, *arguments: str) -> str:
    command = subprocess.run(
        [sys.executable, "-m", "shop.console.shopctl", *arguments],
        capture_output=True, text=True, check=False, timeout=180,
        env={**os.environ, "SHOP_OPS_ENV_FILE": str(shop.workdir / "shop.env")},
    )  # fmt: skip
    assert command.returncode == 0, command.stderr
    return command.stdout
