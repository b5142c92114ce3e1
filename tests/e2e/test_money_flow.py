"""The whole money flow with the services as separate processes (``make run``'s stack), on
the Kafka-protocol broker and on SQS/SNS, driven over HTTP as a frontend and a payment
gateway would: checkout → the gateway pays → the order reads paid → the receipt e-mail with
its invoice; an order left unpaid past its window reads cancelled, its stock back, and a
late payment for it is recorded as a refund due."""

from __future__ import annotations

import email
import io
import json
import os
import re
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import psutil
import pytest
from pypdf import PdfReader

from shop.devstack.aws import DEV_CREDENTIALS
from shop.devstack.testing import wait_for_ready

from .test_make_run import http

ROOT = Path(__file__).resolve().parents[2]
WINDOW_SECONDS = 20


def until(check: Callable[[], bool], what: str, within: float = 90) -> None:
    deadline = time.monotonic() + within
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {within} s waiting for {what}")
        time.sleep(0.5)


def receipt_of(mail_dir: Path, number: str) -> email.message.Message | None:
    for path in mail_dir.glob("*.eml"):
        message = email.message_from_bytes(path.read_bytes())
        if message["Subject"] == f"Receipt for order {number}":
            return message
    return None


def invoice_text(mail_dir: Path, number: str) -> str:
    """The text of the invoice PDF attached to the order's receipt."""
    receipt = receipt_of(mail_dir, number)
    assert receipt is not None
    [invoice] = [part for part in receipt.walk() if part.get_filename()]
    assert invoice.get_filename() == f"invoice-{number}.pdf"
    payload = invoice.get_payload(decode=True)
    assert isinstance(payload, bytes)
    return "".join(page.extract_text() for page in PdfReader(io.BytesIO(payload)).pages)


def procfile(transport: str, workdir: Path) -> Path:
    """``make run``'s procfile, on ``transport``: the same processes, their messaging
    settings pointed at the SQS/SNS endpoint instead of the broker."""
    if transport == "kafka":
        return ROOT / "devstack.toml"
    text = re.sub(
        r'(SHOP_\w+_MESSAGING__)TRANSPORT = "kafka"',
        r'\1TRANSPORT = "sqs"',
        (ROOT / "devstack.toml").read_text(),
    )
    text = re.sub(
        r'(SHOP_\w+_MESSAGING__)KAFKA__BOOTSTRAP_SERVERS = "\{kafka_bootstrap\}"',
        r'\1SQS__ENDPOINT_URL = "{aws_url}"\n\1SQS__REGION = "{aws_region}"\n'
        r'\1SQS__WAIT_TIME_SECONDS = "1"',
        text,
    )
    assert text.count('TRANSPORT = "sqs"') == text.count("SQS__ENDPOINT_URL") >= 4, text
    path = workdir / "devstack.sqs.toml"
    path.write_text(text)
    return path


@pytest.mark.parametrize("transport", ["kafka", "sqs"])
def test_an_order_is_paid_through_the_gateway_and_an_unpaid_one_expires(
    tmp_path: Path, transport: str
) -> None:
    env = {
        **os.environ,
        "COLUMNS": "200",
        "SHOP_ORDER_PAYMENT_WINDOW_SECONDS": str(WINDOW_SECONDS),
        # The embedded SQS/SNS endpoint's credentials, found by botocore's default chain.
        "AWS_ACCESS_KEY_ID": DEV_CREDENTIALS[0],
        "AWS_SECRET_ACCESS_KEY": DEV_CREDENTIALS[1],
    }
    process = subprocess.Popen(
        [sys.executable, "-m", "shop.devstack", "up", "--workdir", str(tmp_path / "stack"),
         "--procfile", str(procfile(transport, tmp_path))],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=ROOT, env=env,
    )  # fmt: skip
    children: list[psutil.Process] = []
    try:
        banner = wait_for_ready(process)
        children = psutil.Process(process.pid).children(recursive=True)
        order_api = re.search(r"order-api\s+│\s+(http://[\d.:]+)/docs", banner)
        payment_api = re.search(r"payment-api\s+│\s+http://([\d.]+):(\d+)/docs", banner)
        postgres = re.search(r"postgres\s+│\s+(postgresql://\S+?)/\S*\s", banner)
        assert order_api, banner
        assert payment_api, banner
        assert postgres, banner
        gateway_env = {
            **env,
            "SHOP_PAYMENT_DATABASE_URL": f"{postgres[1]}/shop_payment",
            "SHOP_PAYMENT_HOST": payment_api[1],
            "SHOP_PAYMENT_PORT": payment_api[2],
        }
        token = subprocess.run(
            [sys.executable, "-m", "shop.order", "token"],
            capture_output=True, text=True, check=True, cwd=ROOT,
        ).stdout.strip()  # fmt: skip
        auth = {"Authorization": f"Bearer {token}"}

        def checkout(sku: str) -> dict[str, object]:
            status, body = http(
                "POST",
                f"{order_api[1]}/v1/orders",
                {"items": [{"sku": sku, "quantity": 1}]},
                {**auth, "Idempotency-Key": str(uuid.uuid4()), "Content-Type": "application/json"},
            )
            assert status == 201, body
            return dict(json.loads(body))

        def status_of(order: dict[str, object]) -> str:
            _, body = http("GET", f"{order_api[1]}/v1/orders/{order['id']}", headers=auth)
            return str(json.loads(body)["status"])

        def stock_of(sku: str) -> int:
            _, body = http("GET", f"{order_api[1]}/v1/products/{sku}")
            return int(json.loads(body)["in_stock"])

        def gateway_pays(order: dict[str, object]) -> bool:
            done = subprocess.run(
                [sys.executable, "-m", "shop.payment.gateway", "pay", str(order["number"])],
                capture_output=True, text=True, cwd=ROOT, env=gateway_env, check=False,
            )  # fmt: skip
            return done.returncode == 0

        serum_stock = stock_of("SERUM-NIA-30")
        paid = checkout("SUN-SPF50-50")
        unpaid = checkout("SERUM-NIA-30")
        assert stock_of("SERUM-NIA-30") == serum_stock - 1

        # The gateway knows the payment once payment-service has opened it.
        until(lambda: gateway_pays(paid), "payment-service to open the payment")
        until(lambda: status_of(paid) == "paid", "the order to read paid")
        until(
            lambda: receipt_of(tmp_path / "stack" / "mail", str(paid["number"])) is not None,
            "receipt",
        )
        text = invoice_text(tmp_path / "stack" / "mail", str(paid["number"]))
        assert str(paid["number"]) in text
        assert "Payment reference: evt_" in text

        until(lambda: status_of(unpaid) == "cancelled", "the unpaid order to expire")
        assert stock_of("SERUM-NIA-30") == serum_stock
        assert status_of(paid) == "paid", "a paid order outlives its window"
        assert gateway_pays(unpaid), "a late notification is still taken"
        worker_log = tmp_path / "stack" / "logs" / "order-worker.log"
        until(lambda: "refund due" in worker_log.read_text(), "the refund due to be recorded")
    finally:
        process.send_signal(signal.SIGINT)
        code = process.wait(timeout=60)
        _, alive = psutil.wait_procs(children, timeout=20)
        assert alive == [], f"left running: {[p.pid for p in alive]}"
    assert code == 0
