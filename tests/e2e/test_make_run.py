"""What ``make run`` starts, driven as a person would, on either bus: the shop comes up on
embedded infrastructure, takes 20 orders over HTTP, the gateway pays each, every order gets
its confirmation and its receipt, and SIGTERM stops it all without orphans; and
``shopctl demo``'s traffic completes, also against a slow provider failing 30 % of sends."""

from __future__ import annotations

import asyncio
import email
import email.policy
import json
import os
import subprocess
import sys
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from shop.messaging.tracing import read_spans
from shop.ops.demo import run_demo
from shop.ops.settings import OpsSettings

from .shop_stack import http, running_shop, until

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


@pytest.mark.parametrize("transport", ["kafka", "sqs"])
def test_twenty_orders_are_paid_and_each_gets_both_emails(tmp_path: Path, transport: str) -> None:
    with running_shop(tmp_path / "stack", transport) as shop:
        assert "try:" in shop.banner, "the banner gives commands to try"
        status, products = http("GET", f"{shop.order_api}/v1/products")
        assert status == 200
        assert set(SKUS) <= {product["sku"] for product in json.loads(products)}
        token = shop.customer_token()
        with ThreadPoolExecutor(max_workers=4) as pool:
            orders = list(
                pool.map(lambda n: shop.checkout(token, SKUS[n % len(SKUS)]), range(ORDERS))
            )
        assert len({order["id"] for order in orders}) == ORDERS

        for order in orders:
            until(
                lambda order=order: shop.gateway_pays(order),
                f"the gateway to pay {order['number']}",
            )
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

        # One order's trace, begun by the frontend's traceparent, crosses the processes.
        traced = shop.checkout(token, SKUS[0], traceparent=f"00-{TRACE_ID}-{'1' * 16}-01")

        def processes_in_trace() -> set[tuple[str, int]]:
            spans = read_spans(shop.workdir / "traces", trace_id=TRACE_ID)
            return {(span.service, span.pid) for span in spans}

        until(lambda: len(processes_in_trace()) >= 4, f"{traced['number']}'s trace in 4 processes")
        services = {service for service, _ in processes_in_trace()}
        assert {"order-service", "notification-service", "payment-service"} <= services


@pytest.mark.parametrize(
    ("transport", "orders", "email_failure"), [("kafka", 200, None), ("sqs", 100, 0.3)]
)
def test_shopctl_demo_completes_every_order_even_with_a_failing_provider(
    tmp_path: Path,
    transport: str,
    orders: int,
    email_failure: float | None,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Retries 20 times sooner (2 s becomes 0.1 s): a send that fails six times in a row
    # still ends well within the demo's wait, as it would within minutes at full scale.
    scaled = {"SHOP_NOTIFICATION_MESSAGING__TIME_SCALE": "0.05"}
    with running_shop(tmp_path / "stack", transport, scaled) as shop:
        monkeypatch.setenv("SHOP_OPS_ENV_FILE", str(shop.workdir / "shop.env"))
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
        command = subprocess.run(
            [sys.executable, "-m", "shop.console.shopctl", "demo", "--orders", "10", "--json"],
            capture_output=True, text=True, check=False, timeout=180,
            env={**os.environ, "SHOP_OPS_ENV_FILE": str(shop.workdir / "shop.env")},
        )  # fmt: skip
        assert command.returncode == 0, command.stderr
        assert json.loads(command.stdout)["paid"] == 10
