"""What ``make run`` starts, driven as a person would: the shop takes 20 orders over HTTP,
the gateway pays each, every order gets its confirmation and its receipt, one order's trace
crosses four processes, and ``shopctl demo``'s traffic completes (on SQS against a slow
provider failing 30 % of sends, whose retries an order's timeline shows). It runs on the
order flows' stacks once their scenarios are done (a stack costs half a minute to start);
leaving the stack checks that SIGTERM stops it all without orphans."""

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
from dataclasses import dataclass
from pathlib import Path

from shop.devstack.load import run_demo
from shop.devstack.spans import read_spans
from shop.messaging.tracing import MESSAGE_KEY, RETRY_SCHEDULED

from .shop_stack import RunningShop, http, until

ORDERS = 20
TRACE_ID = "5e1f" * 8
SKUS = ["SUN-SPF50-50", "SERUM-NIA-30", "CLEANSER-GEL-150", "MOIST-GEL-50"]


@dataclass(frozen=True)
class Demo:
    orders: int
    email_failure: float | None
    """The share of sends the provider fails during the demo (it is slow too), or None."""


DEMOS = {"kafka": Demo(100, None), "sqs": Demo(100, 0.3)}
"""``shopctl demo``'s traffic on each bus: 100 orders at once, whose payments must open and
be paid within the stack's 60 s payment window (with 200, the last ones' payments opened
later than that on a busy two-core machine, and those orders expired). On SQS the provider
is slow and fails 30 % of sends; the stacks retry e-mails 20 times sooner
(:data:`SCALED_RETRIES`), so that a send failing six times in a row still ends well within
the demo's wait, as it would within minutes at full scale."""
SCALED_RETRIES = {"SHOP_NOTIFICATION_MESSAGING__TIME_SCALE": "0.05"}
"""Environment of the stacks the story runs on: e-mail retries 20 times sooner (2 s becomes
0.1 s)."""


def make_run_story(shop: RunningShop, transport: str) -> None:
    twenty_orders_are_paid_and_each_gets_both_emails(shop)
    one_orders_trace_crosses_four_processes(shop)
    demo = DEMOS[transport]
    shopctl_demo_completes_every_order(shop, demo)
    if demo.email_failure:
        a_retried_orders_timeline_shows_its_retries(shop)


def subjects(mail_dir: Path) -> Counter[str]:
    """How many e-mails of each subject the SMTP sink kept."""
    found: Counter[str] = Counter()
    for path in mail_dir.glob("*.eml"):
        message = email.message_from_bytes(path.read_bytes(), policy=email.policy.default)
        found[str(message["Subject"])] += 1
    return found


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
    expected = {
        subject
        for order in orders
        for subject in (
            f"Order {order['number']} confirmed",
            f"Receipt for order {order['number']}",
        )
    }

    def both_emails_each() -> bool:
        return expected <= subjects(shop.mail_dir).keys()

    until(both_emails_each, "a confirmation and a receipt for every order", within=120)
    seen = subjects(shop.mail_dir)
    assert {subject: seen[subject] for subject in expected if seen[subject] > 1} == {}, (
        "each e-mail is sent once"
    )


def one_orders_trace_crosses_four_processes(shop: RunningShop) -> None:
    """Begun by order-service's API, which links the frontend's traceparent rather than
    continuing it, it reads request → send → process in each of the consuming workers."""
    token = shop.customer_token()
    frontend_span = "1" * 16
    traced = shop.checkout(token, SKUS[0], traceparent=f"00-{TRACE_ID}-{frontend_span}-01")

    def linked_request() -> str | None:
        for span in read_spans(shop.workdir / "traces"):
            if span.kind == "SERVER" and (TRACE_ID, frontend_span) in span.links:
                return span.trace_id
        return None

    until(lambda: linked_request() is not None, f"{traced['number']}'s request span")
    trace_id = linked_request()
    assert trace_id is not None
    assert trace_id != TRACE_ID

    def processes_in_trace() -> set[tuple[str, int]]:
        spans = read_spans(shop.workdir / "traces", trace_id=trace_id)
        return {(span.service, span.pid) for span in spans if span.pid is not None}

    until(lambda: len(processes_in_trace()) >= 4, f"{traced['number']}'s trace in 4 processes")
    spans = read_spans(shop.workdir / "traces", trace_id=trace_id)
    services = {span.service for span in spans}
    assert {"order-service", "notification-service", "payment-service"} <= services
    by_id = {span.span_id: span for span in spans}
    consumers = [span for span in spans if span.kind == "CONSUMER"]
    assert consumers
    for consumer in consumers:
        parent = by_id.get(consumer.parent_span_id or "")
        assert parent is not None, f"{consumer.name}'s parent is in the trace"
        assert parent.kind == "PRODUCER", f"{consumer.name} is a child of the relay's send"
    assert read_spans(shop.workdir / "traces", trace_id=TRACE_ID) == []  # nothing continued it


def shopctl_demo_completes_every_order(shop: RunningShop, demo: Demo) -> None:
    summary = asyncio.run(
        run_demo(
            shop.ops_settings(),
            orders=demo.orders,
            concurrency=16,
            email_failure=demo.email_failure,
            email_latency=(0.05, 0.3) if demo.email_failure else None,
            within=240,
        )
    )
    assert summary.complete, summary.problems
    assert (summary.placed, summary.paid) == (demo.orders, demo.orders)
    assert (summary.confirmations, summary.receipts) == (demo.orders, demo.orders)
    assert summary.dead_letters == 0
    if demo.email_failure:
        assert summary.retries > 0, "the failing provider made the worker retry"
    assert summary.checkout is not None
    assert summary.checkout.count == demo.orders
    # The command itself, as a person runs it: exit 0 and a summary to read.
    command = shopctl(shop, "demo", "--orders", "10", "--json")
    assert json.loads(command)["paid"] == 10


def a_retried_orders_timeline_shows_its_retries(shop: RunningShop) -> None:
    retried = [
        span
        for span in read_spans(shop.workdir / "traces")
        if span.service == "notification-service"
        and any(event.name == RETRY_SCHEDULED for event in span.events)
    ]
    assert retried, "the failing provider's retries are in the traces"
    order = str(retried[-1].attributes[MESSAGE_KEY])
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
