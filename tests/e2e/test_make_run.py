"""What ``make run`` starts, driven as a person would, on either bus: the shop comes up on
embedded infrastructure, takes 20 orders over HTTP, the gateway pays each, every order gets
its confirmation and its receipt, and SIGTERM stops it all without orphans."""

from __future__ import annotations

import email
import email.policy
import json
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from .shop_stack import http, running_shop, until

ORDERS = 20
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
