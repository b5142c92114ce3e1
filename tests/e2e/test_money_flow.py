"""The whole money flow with the services as separate processes (``make run``'s stack), on
the Kafka-protocol broker and on SQS/SNS, driven over HTTP as a frontend and a payment
gateway would: checkout → the gateway pays → the order reads paid → the receipt e-mail with
its invoice; an order left unpaid past its window reads cancelled, its stock back, and a
late payment for it is recorded as a refund due."""

from __future__ import annotations

import email
import io
import json
from pathlib import Path

import pytest
from pypdf import PdfReader

from .shop_stack import http, running_shop, until

WINDOW_SECONDS = 20


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


@pytest.mark.parametrize("transport", ["kafka", "sqs"])
def test_an_order_is_paid_through_the_gateway_and_an_unpaid_one_expires(
    tmp_path: Path, transport: str
) -> None:
    extra = {"SHOP_ORDER_PAYMENT_WINDOW_SECONDS": str(WINDOW_SECONDS)}
    with running_shop(tmp_path / "stack", transport, extra) as shop:
        token = shop.customer_token()

        def checkout(sku: str) -> dict[str, object]:
            return shop.checkout(token, sku)

        def status_of(order: dict[str, object]) -> str:
            return shop.order_status(token, order)

        def stock_of(sku: str) -> int:
            _, body = http("GET", f"{shop.order_api}/v1/products/{sku}")
            return int(json.loads(body)["in_stock"])

        gateway_pays = shop.gateway_pays

        serum_stock = stock_of("SERUM-NIA-30")
        paid = checkout("SUN-SPF50-50")
        unpaid = checkout("SERUM-NIA-30")
        assert stock_of("SERUM-NIA-30") == serum_stock - 1

        # The gateway knows the payment once payment-service has opened it.
        until(lambda: gateway_pays(paid), "payment-service to open the payment")
        until(lambda: status_of(paid) == "paid", "the order to read paid")
        until(lambda: receipt_of(shop.mail_dir, str(paid["number"])) is not None, "receipt")
        text = invoice_text(shop.mail_dir, str(paid["number"]))
        assert str(paid["number"]) in text
        assert "Payment reference: evt_" in text

        until(lambda: status_of(unpaid) == "cancelled", "the unpaid order to expire")
        assert stock_of("SERUM-NIA-30") == serum_stock
        assert status_of(paid) == "paid", "a paid order outlives its window"
        assert gateway_pays(unpaid), "a late notification is still taken"
        until(lambda: "refund due" in shop.log("order-worker"), "the refund due to be recorded")
