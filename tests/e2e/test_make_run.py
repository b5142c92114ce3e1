"""What ``make run`` starts, driven as a person would: the shop comes up on embedded
infrastructure, takes an order over HTTP, relays its event, e-mails the confirmation, and
stops without orphans."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.request
import uuid
from pathlib import Path

import psutil

from shop.devstack.testing import wait_for_ready

ROOT = Path(__file__).resolve().parents[2]


def http(
    method: str, url: str, body: object = None, headers: dict[str, str] | None = None
) -> tuple[int, str]:
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(url, data=data, method=method, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=10) as reply:
            return reply.status, reply.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


def emails_with(mail_dir: Path, line: str) -> list[Path]:
    """The .eml files the SMTP sink wrote that hold ``line``."""
    return [path for path in mail_dir.glob("*.eml") if line in path.read_text(errors="replace")]


def test_the_shop_takes_an_order_and_emails_its_confirmation(tmp_path: Path) -> None:
    process = subprocess.Popen(
        [sys.executable, "-m", "shop.devstack", "up", "--workdir", str(tmp_path),
         "--procfile", str(ROOT / "devstack.toml")],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        cwd=ROOT,
        env={**os.environ, "COLUMNS": "200"},
    )  # fmt: skip
    children: list[psutil.Process] = []
    try:
        banner = wait_for_ready(process)
        children = psutil.Process(process.pid).children(recursive=True)
        api = re.search(r"order-api\s+│\s+(http://[\d.:]+)/docs", banner)
        worker = re.search(r"order-worker\s+│\s+(http://[\d.:]+)/readyz", banner)
        assert api, banner
        assert worker, banner
        assert re.search(r"notification-worker\s+│\s+http://[\d.:]+/readyz", banner), banner
        token = subprocess.run(
            [sys.executable, "-m", "shop.order", "token"],
            capture_output=True, text=True, check=True, cwd=ROOT,
        ).stdout.strip()  # fmt: skip

        status, products = http("GET", f"{api[1]}/v1/products")
        assert status == 200
        assert len(json.loads(products)) == 12
        status, order = http(
            "POST",
            f"{api[1]}/v1/orders",
            {"items": [{"sku": "SUN-SPF50-50", "quantity": 1}]},
            {
                "Authorization": f"Bearer {token}",
                "Idempotency-Key": str(uuid.uuid4()),
                "Content-Type": "application/json",
            },
        )
        assert status == 201, order

        deadline = time.monotonic() + 60
        published = 0.0
        while published < 1 and time.monotonic() < deadline:
            time.sleep(0.5)
            _, metrics = http("GET", f"{worker[1]}/metrics")
            found = re.search(r"^messaging_relay_published_total (\S+)$", metrics, re.M)
            published = float(found[1]) if found else 0.0
        assert published >= 1, "the worker's relay never published the OrderCreated"

        subject = f"Subject: Order {json.loads(order)['number']} confirmed"
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not emails_with(tmp_path / "mail", subject):
            time.sleep(0.5)
        assert emails_with(tmp_path / "mail", subject), "no confirmation e-mail in the mail folder"
    finally:
        process.send_signal(signal.SIGINT)
        code = process.wait(timeout=60)
        _, alive = psutil.wait_procs(children, timeout=20)
        assert alive == [], f"left running: {[p.pid for p in alive]}"
    assert code == 0
