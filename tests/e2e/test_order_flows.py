"""The shop's order flows end to end: the services as separate processes on ``make run``'s
stack, on the Kafka-protocol broker and on SQS/SNS, driven over HTTP as a frontend and a
payment gateway would. Each scenario asserts what can be seen from outside: an order's
status over the order API, stock over ``/v1/products``, the e-mails in the SMTP sink's
folder, and where no API shows it, the services' own databases and the dead letters, read as
``shopctl`` reads them (:mod:`shop.ops`).

Starting a stack costs half a minute, so each bus gets one, and its scenarios all run on it
at once, each in a thread of its own with a customer and a product of its own (so that a
product's stock counts that scenario's orders only). The payment window is the longest wait
of all; it runs while the other scenarios proceed. Then ``make run``'s story runs on the
same stack (:mod:`.make_run_story`). One test per scenario then reports how its scenario
ended.
"""

from __future__ import annotations

import asyncio
import email
import email.policy
import functools
import io
import json
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from email.message import EmailMessage
from email.parser import BytesHeaderParser
from pathlib import Path
from typing import Any

import pytest
from pypdf import PdfReader
from pypdf.errors import PdfReadError

from shop.ops.deadletters import DeadLetterEntry, DeadLetterQuery, list_dead_letters
from shop.ops.internal import listed_by_ids, operator_port
from shop.ops.reconciliation import Reconciliation, reconcile
from shop.ops.refunds import RefundByHand, record_refund_by_hand
from shop.ops.settings import ORDER_SERVICE, PAYMENT_SERVICE, OpsSettings
from shop.ops.tokens import customer_token
from shop.payment.settings import DEVELOPMENT_MIDTRANS_SERVER_KEY, DEVELOPMENT_WEBHOOK_SECRET
from shop.simulators import gateway
from shop.simulators.gateway import Answer, Format, Notice

from .make_run_story import SCALED_RETRIES, make_run_story
from .shop_stack import Reply, RunningShop, http_reply, running_shop, until

TRANSPORTS = ["kafka", "sqs"]
PROVIDERS = [Format.SHOP, Format.MIDTRANS]

WINDOW_SECONDS = 60
"""Every order's payment window on these stacks: short enough for an order to expire while
the other scenarios run, long enough for those that pay an order to pay it first even when
the embedded broker stalls (a produce once went unanswered for the producer's whole 40 s
request timeout before it was retried and sent, and a 30 s window ended first)."""
GRACE_SECONDS = 5
"""payment-service's grace after the window, for notifications in flight."""
PAST_THE_WINDOW = WINDOW_SECONDS + GRACE_SECONDS + 60
"""How long to wait for what happens at an order's deadline: its window and grace, then the
relay publishing the expiry and the workers handling it on a busy machine."""
EARLY_BY_SECONDS = 60
"""How long a notification waits for its order's OrderCreated in the long-early scenario:
longer than the retry budget that used to run out on it (2+4+8+16 s)."""

# Each scenario's own product: its stock then moves with that scenario's orders alone.
PAID_SKU = "SUN-SPF50-50"
REPLAY_SKU = "TONER-HA-150"
REPEATED_SKU = {Format.SHOP: "CLEANSER-GEL-150", Format.MIDTRANS: "CLEANSER-OIL-200"}
EARLY_SKU = {Format.SHOP: "MOIST-GEL-50", Format.MIDTRANS: "ESSENCE-SNAIL-100"}
WRONG_AMOUNT_SKU = "MASK-CLAY-100"
CANCELLED_SKU = "SERUM-VITC-20"
REFUND_SKU = "MOIST-CERA-50"
EXPIRY_SKU = "SERUM-NIA-30"
MONEY_SKU = "LIP-BALM-10"
"""The money scenarios' product: they count no stock, so they share it."""
LONG_EARLY_SKU = "SERUM-RET-30"

SUBJECTS = {
    "confirmation": "Order {number} confirmed",
    "receipt": "Receipt for order {number}",
    "cancellation": "Order {number} cancelled",
    "refund": "Refund for order {number}",
    "partial refund": "Partial refund for order {number}",
    "refund completed": "Refund for order {number} completed",
    "late payment refund": "Your payment for cancelled order {number} refunded",
    "chargeback": "Payment for order {number} reversed by your bank",
}
"""What notification-service calls each e-mail it sends about an order."""

Order = dict[str, Any]
"""An order as the order API answers it (``id``, ``number``, ``status``, ``total`` …)."""

DEVELOPMENT_KEYS = gateway.SigningKeys(
    webhook_secret=DEVELOPMENT_WEBHOOK_SECRET, midtrans_server_key=DEVELOPMENT_MIDTRANS_SERVER_KEY
)
"""What a gateway signs with for payment-service as make run starts it (its development
defaults): the crafted notifications of these tests, posted straight to its webhooks."""


@dataclass(frozen=True)
class Customer:
    """A shopper with a token of their own, for whom the frontend calls the order API."""

    order_api: str
    email: str
    token: str

    def _headers(self, idempotency_key: str | None = None) -> dict[str, str]:
        headers = {"Authorization": f"Bearer {self.token}", "Content-Type": "application/json"}
        if idempotency_key is not None:
            headers["Idempotency-Key"] = idempotency_key
        return headers

    def place(self, items: list[dict[str, object]], idempotency_key: str) -> Reply:
        return http_reply(
            "POST", f"{self.order_api}/v1/orders", {"items": items}, self._headers(idempotency_key)
        )

    def checkout(self, sku: str, quantity: int = 1) -> Order:
        reply = self.place([{"sku": sku, "quantity": quantity}], str(uuid.uuid4()))
        assert reply.status == 201, reply.text
        return dict(reply.json())

    def status(self, order: Order) -> str:
        reply = http_reply(
            "GET", f"{self.order_api}/v1/orders/{order['id']}", None, self._headers()
        )
        assert reply.status == 200, reply.text
        return str(reply.json()["status"])

    def cancel(self, order: Order) -> Reply:
        return http_reply(
            "POST", f"{self.order_api}/v1/orders/{order['id']}/cancel", None, self._headers()
        )

    def orders(self) -> list[Order]:
        reply = http_reply("GET", f"{self.order_api}/v1/orders?limit=100", None, self._headers())
        assert reply.status == 200, reply.text
        return list(reply.json()["orders"])


class Gate:
    """Requests to one process, held while it is stopped: ``open()`` around each request
    (it waits while the gate is closed; within an ``open()`` of its own thread, never),
    ``closed()`` around the stop (it waits for the requests under way to end first)."""

    def __init__(self) -> None:
        self._changed = threading.Condition()
        self._asking = 0
        self._shut = False
        self._held = threading.local()

    @contextmanager
    def open(self) -> Iterator[None]:
        depth = getattr(self._held, "depth", 0)
        with self._changed:
            if not depth:
                assert self._changed.wait_for(lambda: not self._shut, timeout=300), "still closed"
            self._asking += 1
        self._held.depth = depth + 1
        try:
            yield
        finally:
            self._held.depth = depth
            with self._changed:
                self._asking -= 1
                self._changed.notify_all()

    @contextmanager
    def closed(self) -> Iterator[None]:
        with self._changed:
            self._shut = True
            assert self._changed.wait_for(lambda: self._asking == 0, timeout=300), "still asked"
        try:
            yield
        finally:
            with self._changed:
                self._shut = False
                self._changed.notify_all()


@dataclass(frozen=True)
class Shop:
    """One running stack: its customers, its payment gateway, and what an operator reads of
    it where no API shows it."""

    running: RunningShop
    ops: OpsSettings
    _order_service: Gate = field(default_factory=Gate)

    def customer(self, name: str) -> Customer:
        """A customer of the development identity provider, at ``name``@example.com."""
        address = f"{name}@example.com"
        return Customer(self.running.order_api, address, customer_token(self.ops, name, address))

    def stock_of(self, sku: str) -> int:
        return self.running.stock_of(sku)

    # -- the payment gateway ------------------------------------------------------------

    def notices(self, order: Order, **how: Any) -> list[Notice]:
        """What the gateway sends about ``order``'s payment (``how``: the options of
        :func:`shop.simulators.gateway.notices`). The gateway knows the order's id, total
        and currency from the checkout's answer, as the frontend handed them over."""
        payment = gateway.Payment(uuid.UUID(order["id"]), order["total"], order["currency"])
        return gateway.notices(payment, DEVELOPMENT_KEYS, **how)

    def send(self, sequence: list[Notice], *, concurrently: bool = False) -> list[Answer]:
        """Post crafted notifications straight to payment-service's webhooks."""
        return asyncio.run(
            gateway.send(self.ops.payment_api_url, sequence, concurrently=concurrently)
        )

    def pay(self, order: Order, **how: Any) -> list[Answer]:
        """The customer pays ``order`` at the development gateway (``how``: the options of
        :func:`shop.simulators.gateway.pay_at_gateway`), which records the charge and sends
        its notifications; what payment-service's webhook answered to each."""
        payment = gateway.Payment(uuid.UUID(order["id"]), order["total"], order["currency"])
        return asyncio.run(gateway.pay_at_gateway(self.ops.gateway_url, payment, **how))

    def charge(self, order: Order) -> dict[str, Any]:
        """The gateway's ledger entry for ``order``'s charge."""
        return asyncio.run(gateway.charge_of(self.ops.gateway_url, uuid.UUID(order["id"])))

    def notify_again(self, order: Order, **how: Any) -> list[Answer]:
        """The gateway sends its notifications about ``order`` again, word for word."""
        return asyncio.run(
            gateway.notify_again(self.ops.gateway_url, uuid.UUID(order["id"]), **how)
        )

    # -- the services, as their internal APIs tell (what shopctl reads) ------------------

    @contextmanager
    def order_worker_paused(self) -> Iterator[None]:
        """order-service's worker stopped for the block (:meth:`RunningShop.paused`), once no
        scenario is asking it anything. The scenarios running beside it wait for it to
        answer again before they ask: a stopped process answers nobody, and their reads
        would time out."""
        with self._order_service.closed(), self.running.paused("order-worker"):
            yield

    def _internal(self, service: str, path: str, **params: str) -> Any:
        async def ask() -> Any:
            async with operator_port(self.ops, service) as port:
                return await port.get(path, params)

        if service != ORDER_SERVICE:
            return asyncio.run(ask())
        with self._order_service.open():
            return asyncio.run(ask())

    def payment(self, order: Order) -> dict[str, Any] | None:
        """The payment payment-service opened for ``order``: None until it has."""
        found = self._internal(PAYMENT_SERVICE, f"/internal/v1/orders/{order['id']}/payments")
        return found["payments"][0] if found["payments"] else None

    def payment_status(self, order: Order) -> str | None:
        payment = self.payment(order)
        return None if payment is None else str(payment["status"])

    def notifications(self, order: Order) -> list[dict[str, Any]]:
        """The gateway's notifications payment-service kept about ``order``, each with the
        outcome of applying it (None until its worker has)."""
        found = self._internal(PAYMENT_SERVICE, f"/internal/v1/orders/{order['id']}/payments")
        return list(found["notifications"])

    def applied_notifications(self, order: Order, count: int) -> list[dict[str, Any]] | None:
        """The ``count`` notifications kept about ``order`` once every one of them is
        applied; None until then."""
        kept = self.notifications(order)
        done = len(kept) == count and all(row["outcome"] is not None for row in kept)
        return kept if done else None

    def conflicts(self, order: Order) -> list[dict[str, Any]]:
        """The payments order-service refused to apply to ``order``, for a person to settle."""
        found = self._internal(ORDER_SERVICE, f"/internal/v1/orders/{order['id']}")
        return list(found["payment_conflicts"])

    def published(self, service: str, order: Order) -> Counter[str]:
        """How many messages of each type ``service`` put in its outbox about ``order``
        (the only way it publishes anything)."""
        found = self._internal(service, "/internal/v1/outbox/messages", key=str(order["id"]))
        return Counter(str(message["message_type"]) for message in found["messages"])

    def every_order_has_its_payment(self) -> bool:
        """Whether payment-service has opened a payment for every order placed so far (the
        stack's newest 200: more than these tests place)."""

        async def each_paid_for() -> bool:
            async with (
                operator_port(self.ops, ORDER_SERVICE) as orders,
                operator_port(self.ops, PAYMENT_SERVICE) as payments,
            ):
                placed = (await orders.get("/internal/v1/orders", {"limit": "200"}))["orders"]
                opened = await listed_by_ids(
                    payments,
                    "/internal/v1/payments",
                    name="order_ids",
                    ids=[order["id"] for order in placed],
                    field="payments",
                )
            return len(opened) >= len(placed)

        with self._order_service.open():
            return asyncio.run(each_paid_for())

    def window_over(self, order: Order) -> bool:
        """Whether payment-worker has handled ``order``'s payment window ending (its
        scheduled ExpirePayment), whatever it found."""
        return self.logged("payment-worker", "payment window over", order["id"])

    def refunds_at_gateway(self, order: Order) -> list[int]:
        """The amounts the gateway's ledger lists as refunded on ``order``'s charge."""
        return gateway.refunds_of(self.charge(order))

    def refund_at_gateway(self, order: Order, amount: int | None = None) -> list[Answer]:
        return asyncio.run(
            gateway.refund_at_gateway(self.ops.gateway_url, uuid.UUID(order["id"]), amount)
        )

    def charge_back(self, order: Order, amount: int | None = None) -> list[Answer]:
        return asyncio.run(
            gateway.charge_back(self.ops.gateway_url, uuid.UUID(order["id"]), amount)
        )

    @contextmanager
    def order_service_answering(self) -> Iterator[None]:
        """order-service kept answering for the block: a scenario that would stop its
        worker waits for the block to end (a payment window may not run out meanwhile)."""
        with self._order_service.open():
            yield

    def reconcile(self) -> Reconciliation:
        """What ``shopctl reconcile`` does and prints (it reads order-service's orders)."""
        with self._order_service.open():
            return asyncio.run(reconcile(self.ops))

    def refunded_by_hand(self, order: Order, reference: str) -> RefundByHand:
        """What ``shopctl refunded-by-hand ORDER --reference …`` does (it asks order-service
        for the order)."""
        with self._order_service.open():
            return asyncio.run(record_refund_by_hand(self.ops, order["id"], reference=reference))

    def dead_letters(self, order: Order) -> list[DeadLetterEntry]:
        """payment-service's dead letters about ``order``, as ``shopctl dlq list`` finds them."""
        query = DeadLetterQuery(service=PAYMENT_SERVICE, contains=str(order["id"]))
        return asyncio.run(list_dead_letters(self.ops, query))

    def logged(self, process: str, *words: str) -> bool:
        """Whether one line of ``process``'s log has every one of ``words``."""
        lines = self.running.log(process).splitlines()
        return any(all(word in line for word in words) for line in lines)

    # -- the SMTP sink's folder -------------------------------------------------------------

    def _mail_files(self) -> list[Path]:
        return sorted(self.running.mail_dir.glob("*.eml"))

    def emails(self, order: Order) -> Counter[str]:
        """How many e-mails of each kind (``confirmation``, ``receipt``, ``cancellation``)
        went out about ``order``."""
        kinds = {subject.format(number=order["number"]): kind for kind, subject in SUBJECTS.items()}
        parser = BytesHeaderParser(policy=email.policy.default)
        found: Counter[str] = Counter()
        for path in self._mail_files():
            headers = parser.parsebytes(path.read_bytes())
            kind = kinds.get(str(headers["Subject"]))
            if kind is not None:
                found[kind] += 1
        return found

    def recipients(self, order: Order) -> set[str]:
        """Whom the e-mails about ``order`` went to."""
        subjects = {subject.format(number=order["number"]) for subject in SUBJECTS.values()}
        parser = BytesHeaderParser(policy=email.policy.default)
        found = set()
        for path in self._mail_files():
            headers = parser.parsebytes(path.read_bytes())
            if str(headers["Subject"]) in subjects:
                found.add(str(headers["To"]))
        return found

    def invoice_text(self, order: Order) -> str | None:
        """The text of the invoice PDF attached to ``order``'s receipt; None until the
        receipt is there, whole."""
        subject = SUBJECTS["receipt"].format(number=order["number"])
        for path in self._mail_files():
            message = email.message_from_bytes(path.read_bytes(), policy=email.policy.default)
            assert isinstance(message, EmailMessage)
            if str(message["Subject"]) != subject:
                continue
            pdfs = [
                part
                for part in message.iter_attachments()
                if part.get_content_type() == "application/pdf"
            ]
            if not pdfs:
                return None  # the sink is still writing it
            [invoice] = pdfs
            assert invoice.get_filename() == f"invoice-{order['number']}.pdf"
            content = invoice.get_payload(decode=True)
            assert isinstance(content, bytes)
            try:
                pages = PdfReader(io.BytesIO(content)).pages
                return "".join(page.extract_text() for page in pages)
            except PdfReadError:
                return None  # the sink is still writing it
        return None


def accepted_repeats(answers: list[Answer]) -> list[bool]:
    """Whether payment-service took each notification as a repeat; every one must have been
    accepted (200), a repeat as well."""
    assert all(answer.accepted for answer in answers), answers
    return [bool(json.loads(answer.body)["repeat"]) for answer in answers]


# -- the scenarios ---------------------------------------------------------------------------


def a_paid_order_gets_one_confirmation_and_one_receipt(shop: Shop) -> None:
    customer = shop.customer("paid")
    order = customer.checkout(PAID_SKU)
    until(lambda: shop.payment(order), "payment-service to open the order's payment")

    assert accepted_repeats(shop.pay(order)) == [False]

    until(lambda: customer.status(order) == "paid", "the order to read paid")
    text = until(lambda: shop.invoice_text(order), "the receipt with its invoice")
    assert order["number"] in text
    # The reference is the gateway's own for the charge, as its status API gave it.
    assert f"Payment reference: {shop.charge(order)['charge_id']}" in text
    until(lambda: shop.emails(order)["confirmation"], "the order's confirmation")

    # Its window passes as well: payment-worker's expiry finds the payment paid, and a paid
    # order is left as it is.
    until(lambda: shop.window_over(order), "the order's window to end", within=PAST_THE_WINDOW)
    assert customer.status(order) == "paid"
    # order-service published the order's creation and its payment once each and nothing
    # else about it, so these are the only e-mails notification-service can send about it.
    assert shop.published(ORDER_SERVICE, order) == Counter({"order.created": 1, "order.paid": 1})
    assert shop.published(PAYMENT_SERVICE, order)["payment.expired"] == 0
    assert shop.emails(order) == Counter({"confirmation": 1, "receipt": 1})
    assert shop.recipients(order) == {customer.email}


def a_replayed_checkout_makes_one_order(shop: Shop) -> None:
    customer = shop.customer("replay")
    in_stock = shop.stock_of(REPLAY_SKU)
    key = str(uuid.uuid4())
    items: list[dict[str, object]] = [{"sku": REPLAY_SKU, "quantity": 2}]

    first = customer.place(items, key)
    replayed = customer.place(items, key)
    assert first.status == 201, first.text
    assert (replayed.status, replayed.text) == (201, first.text)
    assert replayed.headers["Idempotent-Replayed"] == "true"
    assert shop.stock_of(REPLAY_SKU) == in_stock - 2

    refused = customer.place([{"sku": REPLAY_SKU, "quantity": 1}], key)
    assert refused.status == 422, refused.text
    assert refused.headers["Content-Type"] == "application/problem+json"
    problem = refused.json()
    assert (problem["status"], problem["idempotency_key"]) == (422, key)
    assert problem["detail"]
    assert shop.stock_of(REPLAY_SKU) == in_stock - 2, "a refused checkout reserves nothing"

    # A checkout commits its order before it answers: this list is the proof that the
    # replay made no second order.
    order = first.json()
    assert [placed["id"] for placed in customer.orders()] == [order["id"]]

    # Cancelled, for an event published after the order's OrderCreated: once both of its
    # e-mails are in, notification-service has handled every message about this order.
    assert customer.cancel(order).status == 200
    assert shop.stock_of(REPLAY_SKU) == in_stock
    until(
        lambda: shop.emails(order).keys() >= {"confirmation", "cancellation"},
        "the order's confirmation and cancellation",
    )
    assert shop.emails(order) == Counter({"confirmation": 1, "cancellation": 1})


def repeated_and_out_of_order_notifications_pay_once(shop: Shop, provider: Format) -> None:
    customer = shop.customer(f"repeated-{provider}")
    order = customer.checkout(REPEATED_SKU[provider])
    until(lambda: shop.payment(order), "payment-service to open the order's payment")

    # Two notifications, out of order (Midtrans' settlement before its pending notice, the
    # shop's success before the failure of an earlier attempt), each three times; then the
    # whole lot again at once, as a gateway retrying on slow answers sends them.
    answers = shop.pay(order, fmt=provider, times=3, out_of_order=True)
    assert accepted_repeats(answers) == [False, True, True, False, True, True]
    assert all(accepted_repeats(shop.notify_again(order, every=True, concurrently=True)))

    until(lambda: customer.status(order) == "paid", "the order to read paid")
    kept = until(lambda: shop.applied_notifications(order, 2), "both notifications applied")
    # One of them paid, or none did: the window's end, when the notifications lag behind
    # it, asks the gateway itself and pays (PaymentReceived, counted below, is once).
    assert [row["outcome"] for row in kept].count("paid") <= 1, kept
    payment = shop.payment(order)
    assert payment is not None
    assert payment["status"] == "paid"
    until(lambda: shop.emails(order)["receipt"], "the receipt")

    # Every notification is applied and one of them paid: payment-service published one
    # PaymentReceived, and order-service one OrderPaid, so this receipt is the only one.
    assert shop.published(PAYMENT_SERVICE, order)["payment.received"] == 1
    assert shop.published(ORDER_SERVICE, order)["order.paid"] == 1
    assert shop.conflicts(order) == [], "no payment was taken twice"
    assert shop.emails(order)["receipt"] == 1


def a_notification_ahead_of_its_order_pays_once(shop: Shop, provider: Format) -> None:
    customer = shop.customer(f"early-{provider}")
    order = customer.checkout(EARLY_SKU[provider])

    # Straight after the checkout, before payment-service has (most likely) consumed the
    # order's OrderCreated: its worker retries the notification until the payment is open.
    # Midtrans sends a pending notice, then the settlement.
    answers = shop.pay(order, fmt=provider)
    assert not any(accepted_repeats(answers))

    until(lambda: customer.status(order) == "paid", "the order to read paid")
    kept = until(lambda: shop.applied_notifications(order, len(answers)), "notifications applied")
    # One of them paid, or none did: the window's end, when the notifications lag behind
    # it, asks the gateway itself and pays (PaymentReceived, counted below, is once).
    assert [row["outcome"] for row in kept].count("paid") <= 1, kept
    until(lambda: shop.emails(order)["receipt"], "the receipt")
    # As above: one PaymentReceived, one OrderPaid, so one receipt.
    assert shop.published(PAYMENT_SERVICE, order)["payment.received"] == 1
    assert shop.published(ORDER_SERVICE, order)["order.paid"] == 1
    assert shop.emails(order)["receipt"] == 1


def a_payment_of_the_wrong_amount_pays_nothing(shop: Shop) -> None:
    customer = shop.customer("wrong-amount")
    order = customer.checkout(WRONG_AMOUNT_SKU)
    until(lambda: shop.payment(order), "payment-service to open the order's payment")

    paid = order["total"] + 1000
    # The webhook takes it (the signature is good); the amount is for the worker to judge.
    assert accepted_repeats(shop.pay(order, amount=paid)) == [False]

    [letter] = until(lambda: shop.dead_letters(order), "the ProcessPayment's dead letter")
    reason = f"took {paid} {order['currency']}, but the order is {order['total']}"
    assert letter.message_type == "payment.process"
    assert reason in letter.error_message
    assert letter.attempts == 1, "a permanent failure is not retried"
    payment = shop.payment(order)
    assert payment is not None
    assert payment["status"] != "paid"
    assert reason in str(payment["flagged"])
    assert customer.status(order) != "paid"

    # Nobody cancels this order, and a paid order is never cancelled at its deadline: its
    # reading cancelled shows it stayed pending until then, and nothing paid it since.
    until(lambda: customer.status(order) == "cancelled", "its expiry", within=PAST_THE_WINDOW)
    until(lambda: shop.emails(order)["cancellation"], "the order's cancellation")
    assert shop.published(PAYMENT_SERVICE, order)["payment.received"] == 0
    assert shop.published(ORDER_SERVICE, order)["order.paid"] == 0
    assert shop.emails(order)["receipt"] == 0


def a_customer_cancels_an_unpaid_order(shop: Shop) -> None:
    customer = shop.customer("cancels")
    in_stock = shop.stock_of(CANCELLED_SKU)
    order = customer.checkout(CANCELLED_SKU, quantity=3)
    assert shop.stock_of(CANCELLED_SKU) == in_stock - 3
    # Straight after the checkout: the cancellation may reach payment-service before the
    # order's OrderCreated, and must expire the payment all the same once it is opened.

    cancelled = customer.cancel(order)
    assert cancelled.status == 200, cancelled.text
    assert cancelled.json()["status"] == "cancelled"
    assert customer.status(order) == "cancelled"
    assert shop.stock_of(CANCELLED_SKU) == in_stock

    again = customer.cancel(order)
    assert again.status == 409, again.text
    assert again.json()["status_now"] == "cancelled"

    until(lambda: shop.emails(order)["cancellation"], "the cancellation e-mail")
    until(lambda: shop.payment_status(order) == "expired", "payment-service to expire it")
    assert shop.recipients(order) == {customer.email}


def a_payment_for_a_cancelled_order_is_refunded_once_and_told(shop: Shop) -> None:
    customer = shop.customer("refund")
    order = customer.checkout(REFUND_SKU)
    until(lambda: shop.payment(order), "payment-service to open the order's payment")
    assert customer.cancel(order).status == 200
    # The money comes once every service knows of the cancellation.
    until(lambda: shop.payment_status(order) == "expired", "payment-service to expire it")

    assert accepted_repeats(shop.pay(order)) == [False]

    until(lambda: shop.payment_status(order) == "refunded", "the money to be refunded")
    assert shop.refunds_at_gateway(order) == [order["total"]], "refunded once, in full"
    until(lambda: shop.emails(order)["late payment refund"], "the refund's e-mail")
    assert customer.status(order) == "cancelled"
    assert shop.published(PAYMENT_SERVICE, order)["payment.received"] == 0
    assert shop.published(ORDER_SERVICE, order)["order.paid"] == 0
    assert shop.emails(order)["receipt"] == 0
    assert shop.emails(order)["late payment refund"] == 1


def a_late_bank_transfer_is_refunded_by_hand_and_told(shop: Shop) -> None:
    customer = shop.customer("by-hand")
    order = customer.checkout(MONEY_SKU)
    until(lambda: shop.payment(order), "payment-service to open the order's payment")
    assert customer.cancel(order).status == 200
    until(lambda: shop.payment_status(order) == "expired", "payment-service to expire it")

    # A virtual account paid after the order was cancelled: Midtrans cannot refund it.
    shop.pay(order, fmt=Format.MIDTRANS, method="bank_transfer")
    until(lambda: shop.dead_letters(order), "the refused refund's dead letter")
    assert shop.payment_status(order) == "refund_due"
    [refused] = [f for f in shop.reconcile().findings if f.order_id == order["id"]]
    assert (refused.kind, refused.repaired) == ("refund_refused", False)
    assert "by hand" in refused.detail

    recorded = shop.refunded_by_hand(order, "BCA-TRF-0042")

    assert recorded.status == "refunded"
    until(lambda: shop.emails(order)["late payment refund"], "the refund's e-mail")
    assert shop.refunds_at_gateway(order) == [], "nothing went through the gateway"
    assert customer.status(order) == "cancelled"
    assert not [f for f in shop.reconcile().findings if f.order_id == order["id"]]


def an_unpaid_order_expires_and_a_late_payment_is_refunded_once_and_told(shop: Shop) -> None:
    customer = shop.customer("expiry")
    in_stock = shop.stock_of(EXPIRY_SKU)
    order = customer.checkout(EXPIRY_SKU, quantity=2)
    assert shop.stock_of(EXPIRY_SKU) == in_stock - 2

    until(lambda: customer.status(order) == "cancelled", "its expiry", within=PAST_THE_WINDOW)
    assert shop.stock_of(EXPIRY_SKU) == in_stock
    until(lambda: shop.emails(order)["cancellation"], "the cancellation e-mail")
    assert shop.payment_status(order) == "expired", "cancelled because its payment expired"
    assert shop.published(PAYMENT_SERVICE, order)["payment.expired"] == 1

    # A gateway taking the money after the window closed: taken back, never applied.
    assert accepted_repeats(shop.pay(order)) == [False]
    until(lambda: shop.payment_status(order) == "refunded", "the late payment refunded")
    assert shop.refunds_at_gateway(order) == [order["total"]]
    until(lambda: shop.emails(order)["late payment refund"], "the refund's e-mail")
    assert customer.status(order) == "cancelled"
    assert shop.published(ORDER_SERVICE, order)["order.paid"] == 0
    assert shop.emails(order)["receipt"] == 0


def a_signed_cancel_edited_into_a_settlement_pays_nothing_and_is_flagged(shop: Shop) -> None:
    customer = shop.customer("forged")
    order = customer.checkout(MONEY_SKU)
    until(lambda: shop.payment(order), "payment-service to open the order's payment")
    # The customer's card payment is cancelled at Midtrans, which notifies (status 200).
    shop.pay(order, fmt=Format.MIDTRANS, outcome="cancel")
    transaction = shop.charge(order)["transaction_id"]
    until(lambda: shop.payment_status(order) == "failed", "the cancel to be applied")
    # Whoever holds that signed body edits its status: the signature still holds.
    genuine = gateway.midtrans_notice(
        gateway.Payment(uuid.UUID(order["id"]), order["total"], order["currency"]),
        DEVELOPMENT_KEYS.midtrans_server_key,
        status="cancel",
        amount=order["total"],
        transaction_id=transaction,
    )
    edited = json.loads(genuine.body)
    edited["transaction_status"] = "settlement"
    forged = Notice(genuine.path, json.dumps(edited).encode(), genuine.headers, "forged")

    assert accepted_repeats(shop.send([forged])) == [False]

    [letter] = until(lambda: shop.dead_letters(order), "the forged notification's dead letter")
    assert "says 'settlement', the gateway says 'cancel'" in letter.error_message
    payment = shop.payment(order)
    assert payment is not None
    assert payment["status"] == "failed"
    assert "the gateway says 'cancel'" in str(payment["flagged"])
    assert customer.status(order) == "pending"
    assert shop.published(PAYMENT_SERVICE, order)["payment.received"] == 0


def a_settlement_just_before_the_deadline_whose_notice_is_late_ends_paid(shop: Shop) -> None:
    customer = shop.customer("deadline")
    order = customer.checkout(MONEY_SKU)
    until(lambda: shop.payment(order), "payment-service to open the order's payment")
    placed = datetime.fromisoformat(order["created_at"])
    pay_at = placed + timedelta(seconds=WINDOW_SECONDS - 1)
    time.sleep(max(0.0, (pay_at - datetime.now(UTC)).total_seconds()))

    # Paid a second before the window ends; the notification held back past the deadline.
    shop.pay(order, notify_after=GRACE_SECONDS + 20)

    until(
        lambda: customer.status(order) == "paid", "the order to read paid", within=PAST_THE_WINDOW
    )
    until(lambda: shop.emails(order)["receipt"], "the receipt")
    assert shop.published(PAYMENT_SERVICE, order)["payment.expired"] == 0
    assert shop.emails(order)["cancellation"] == 0
    assert shop.refunds_at_gateway(order) == []


def two_partial_refunds_end_refunded_each_with_its_email(shop: Shop) -> None:
    customer = shop.customer("partial")
    order = customer.checkout(MONEY_SKU, quantity=2)
    until(lambda: shop.payment(order), "payment-service to open the order's payment")
    shop.pay(order)
    until(lambda: customer.status(order) == "paid", "the order to read paid")
    half = order["total"] // 2

    shop.refund_at_gateway(order, half)
    until(lambda: customer.status(order) == "partially_refunded", "the first refund recorded")
    until(lambda: shop.emails(order)["partial refund"], "the first refund's e-mail")
    shop.refund_at_gateway(order, order["total"] - half)

    until(lambda: customer.status(order) == "refunded", "the second refund recorded")
    until(lambda: shop.emails(order)["refund completed"], "the second refund's e-mail")
    assert shop.payment_status(order) == "refunded"
    assert shop.published(PAYMENT_SERVICE, order)["payment.reversed"] == 2
    assert shop.emails(order)["partial refund"] == 1


def a_chargeback_after_paid_ends_charged_back_with_its_email(shop: Shop) -> None:
    customer = shop.customer("chargeback")
    order = customer.checkout(MONEY_SKU)
    until(lambda: shop.payment(order), "payment-service to open the order's payment")
    shop.pay(order, fmt=Format.MIDTRANS)
    until(lambda: customer.status(order) == "paid", "the order to read paid")

    shop.charge_back(order)

    until(lambda: customer.status(order) == "charged_back", "the chargeback recorded")
    until(lambda: shop.emails(order)["chargeback"], "the chargeback's e-mail")
    assert shop.payment_status(order) == "charged_back"


def a_refund_after_paid_ends_refunded_with_its_email(shop: Shop) -> None:
    customer = shop.customer("reversal")
    order = customer.checkout(MONEY_SKU)
    until(lambda: shop.payment(order), "payment-service to open the order's payment")
    shop.pay(order)
    until(lambda: customer.status(order) == "paid", "the order to read paid")

    shop.refund_at_gateway(order)

    until(lambda: customer.status(order) == "refunded", "the refund recorded")
    until(lambda: shop.emails(order)["refund"], "the refund's e-mail")
    assert shop.emails(order)["receipt"] == 1


def a_settlement_whose_notification_was_lost_is_found_by_reconciliation(shop: Shop) -> None:
    customer = shop.customer("reconciled")
    # Reconciled within the payment's window: once it ends, payment-service asks the
    # gateway itself and finds the money (so reconciliation would find nothing to repair).
    # A pause of order-service's worker (shopctl reconcile reads it) waits meanwhile.
    with shop.order_service_answering():
        order = customer.checkout(MONEY_SKU)
        until(lambda: shop.payment(order), "payment-service to open the order's payment")
        shop.pay(order, notify=False)  # the gateway took the money; its notification is lost
        assert shop.notifications(order) == []

        report = shop.reconcile()

    found = [f for f in report.findings if f.order_id == order["id"]]
    assert [(f.kind, f.repaired) for f in found] == [("settlement_missed", True)]
    until(lambda: customer.status(order) == "paid", "the order to read paid")
    until(lambda: shop.emails(order)["receipt"], "the receipt")


def a_notification_a_minute_ahead_of_its_order_pays_once(shop: Shop) -> None:
    customer = shop.customer("long-early")
    # Holding order-service's worker holds every order's OrderCreated, and a payment window
    # runs from the checkout: first every other scenario's order gets its payment.
    time.sleep(10)
    until(shop.every_order_has_its_payment, "the other scenarios' payments to open")
    # order-service's worker (and its relay) held: the order's OrderCreated waits in its
    # outbox while the customer pays and the gateway notifies.
    with shop.order_worker_paused():
        order = customer.checkout(LONG_EARLY_SKU)
        assert accepted_repeats(shop.pay(order)) == [False]
        time.sleep(EARLY_BY_SECONDS)
        assert shop.payment(order) is None, "OrderCreated is not out yet"
        [kept] = shop.notifications(order)
        assert kept["outcome"] is None, "kept, waiting for its payment"

    until(lambda: customer.status(order) == "paid", "the order to read paid")
    until(lambda: shop.emails(order)["receipt"], "the receipt")
    assert shop.published(PAYMENT_SERVICE, order)["payment.received"] == 1
    assert shop.dead_letters(order) == []


SCENARIOS: dict[str, Callable[[Shop], None]] = {
    # First, so that its window runs while the others proceed.
    "expiry": an_unpaid_order_expires_and_a_late_payment_is_refunded_once_and_told,
    "deadline": a_settlement_just_before_the_deadline_whose_notice_is_late_ends_paid,
    "long early": a_notification_a_minute_ahead_of_its_order_pays_once,
    "wrong amount": a_payment_of_the_wrong_amount_pays_nothing,
    "paid": a_paid_order_gets_one_confirmation_and_one_receipt,
    "replay": a_replayed_checkout_makes_one_order,
    **{
        f"repeated {provider}": functools.partial(
            repeated_and_out_of_order_notifications_pay_once, provider=provider
        )
        for provider in PROVIDERS
    },
    **{
        f"early {provider}": functools.partial(
            a_notification_ahead_of_its_order_pays_once, provider=provider
        )
        for provider in PROVIDERS
    },
    "cancel": a_customer_cancels_an_unpaid_order,
    "refund": a_payment_for_a_cancelled_order_is_refunded_once_and_told,
    "forged": a_signed_cancel_edited_into_a_settlement_pays_nothing_and_is_flagged,
    "partial refunds": two_partial_refunds_end_refunded_each_with_its_email,
    "chargeback": a_chargeback_after_paid_ends_charged_back_with_its_email,
    "reversal": a_refund_after_paid_ends_refunded_with_its_email,
    "reconciliation": a_settlement_whose_notification_was_lost_is_found_by_reconciliation,
    "by hand": a_late_bank_transfer_is_refunded_by_hand_and_told,
}


MAKE_RUN = "make run's story"
"""The outcome of :func:`.make_run_story.make_run_story`, run once the scenarios are done
(its demo counts every dead letter and spends stock of the scenarios' products)."""


# One stack per bus, both started at once, each with its scenarios started together as it
# comes up; one test per scenario and bus. The report names each scenario, and the slowest
# (the payment window) sets the pace instead of the sum of them all: the two stacks mostly
# wait (on windows, retries, e-mails), so side by side they take little longer than one.
# Selecting one test runs every scenario all the same.
@pytest.fixture(scope="module")
def flows(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Outcomes]]:
    outcomes: dict[str, Outcomes] = {
        transport: {name: Future() for name in [*SCENARIOS, MAKE_RUN]} for transport in TRANSPORTS
    }
    with ThreadPoolExecutor(len(TRANSPORTS), thread_name_prefix="stack") as stacks:
        running = [
            stacks.submit(
                _flows, transport, tmp_path_factory.mktemp(f"flows-{transport}") / "stack",
                outcomes[transport],
            )
            for transport in TRANSPORTS
        ]  # fmt: skip
        yield outcomes
    for stack in running:
        stack.result()  # a stack that failed to stop fails the last test


@pytest.fixture(params=TRANSPORTS)
def scenarios(request: pytest.FixtureRequest, flows: dict[str, Outcomes]) -> Outcomes:
    return flows[str(request.param)]


Outcomes = dict[str, Future[None]]
"""Each scenario's outcome on one bus, by name."""


def _flows(transport: str, workdir: Path, outcomes: Outcomes) -> None:
    """``transport``'s stack up, every scenario run on it at once, then the stack down; each
    scenario's outcome set in ``outcomes`` as it ends (the stack's failure to start, in
    every outcome)."""
    money = {
        "SHOP_PAYMENT_PAYMENT_WINDOW_SECONDS": str(WINDOW_SECONDS),
        "SHOP_PAYMENT_EXPIRY_GRACE_SECONDS": str(GRACE_SECONDS),
        # Reconciled on demand (the scenario asks), with nothing left out as in flight.
        "SHOP_PAYMENT_RECONCILE_INTERVAL_SECONDS": "3600",
        "SHOP_PAYMENT_RECONCILE_SETTLING_SECONDS": "0",
    }
    try:
        with running_shop(workdir, transport, {**money, **SCALED_RETRIES}) as running:
            shop = Shop(running, running.ops_settings())
            # Leaving the pool waits for every scenario, before the story and the stack stop.
            with ThreadPoolExecutor(len(SCENARIOS), thread_name_prefix=transport) as pool:
                for name, scenario in SCENARIOS.items():
                    pool.submit(scenario, shop).add_done_callback(
                        functools.partial(_pass_on, outcomes[name])
                    )
            with ThreadPoolExecutor(1, thread_name_prefix=f"{transport}-story") as pool:
                pool.submit(make_run_story, running, transport).add_done_callback(
                    functools.partial(_pass_on, outcomes[MAKE_RUN])
                )
    except BaseException as error:
        for outcome in outcomes.values():
            if not outcome.done():
                outcome.set_exception(error)
        raise


def _pass_on(outcome: Future[None], ran: Future[None]) -> None:
    error = ran.exception()
    if error is None:
        outcome.set_result(None)
    else:
        outcome.set_exception(error)


def test_an_order_paid_through_the_gateway_reads_paid_and_gets_one_confirmation_and_one_receipt(
    scenarios: dict[str, Future[None]],
) -> None:
    scenarios["paid"].result()


def test_a_replayed_checkout_answers_the_same_order_and_a_key_reused_for_another_body_is_refused(
    scenarios: dict[str, Future[None]],
) -> None:
    scenarios["replay"].result()


@pytest.mark.parametrize("provider", PROVIDERS)
def test_repeated_and_out_of_order_notifications_pay_an_order_once(
    scenarios: dict[str, Future[None]], provider: Format
) -> None:
    scenarios[f"repeated {provider}"].result()


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_notification_sent_before_payment_service_opened_the_payment_pays_it_once(
    scenarios: dict[str, Future[None]], provider: Format
) -> None:
    scenarios[f"early {provider}"].result()


def test_a_payment_of_the_wrong_amount_is_flagged_dead_lettered_and_never_pays_the_order(
    scenarios: dict[str, Future[None]],
) -> None:
    scenarios["wrong amount"].result()


def test_a_customer_cancelling_an_unpaid_order_gets_the_stock_back_an_email_and_no_payment_due(
    scenarios: dict[str, Future[None]],
) -> None:
    scenarios["cancel"].result()


def test_a_payment_for_a_cancelled_order_is_refunded_once_through_the_gateway_and_told(
    scenarios: dict[str, Future[None]],
) -> None:
    scenarios["refund"].result()


def test_a_signed_midtrans_cancel_edited_into_a_settlement_pays_nothing_and_is_flagged(
    scenarios: dict[str, Future[None]],
) -> None:
    scenarios["forged"].result()


def test_a_settlement_a_second_before_the_deadline_with_its_notice_held_back_ends_paid(
    scenarios: dict[str, Future[None]],
) -> None:
    scenarios["deadline"].result()


def test_two_partial_refunds_at_the_gateway_end_refunded_each_with_its_email(
    scenarios: dict[str, Future[None]],
) -> None:
    scenarios["partial refunds"].result()


def test_a_chargeback_after_paid_ends_charged_back_with_its_email(
    scenarios: dict[str, Future[None]],
) -> None:
    scenarios["chargeback"].result()


def test_a_refund_at_the_gateway_after_paid_ends_refunded_with_its_email(
    scenarios: dict[str, Future[None]],
) -> None:
    scenarios["reversal"].result()


def test_reconciliation_finds_and_repairs_a_settlement_whose_notification_was_lost(
    scenarios: dict[str, Future[None]],
) -> None:
    scenarios["reconciliation"].result()


def test_a_notification_a_minute_ahead_of_its_orders_creation_pays_it_once(
    scenarios: dict[str, Future[None]],
) -> None:
    scenarios["long early"].result()


def test_a_late_bank_transfer_midtrans_cannot_refund_is_refunded_by_hand_and_told(
    scenarios: dict[str, Future[None]],
) -> None:
    scenarios["by hand"].result()


def test_an_order_unpaid_past_its_window_is_cancelled_with_its_stock_back_and_paid_late_is_refunded(
    scenarios: dict[str, Future[None]],
) -> None:
    scenarios["expiry"].result()


def test_make_runs_shop_takes_orders_traces_them_and_completes_shopctl_demo(
    scenarios: dict[str, Future[None]],
) -> None:
    scenarios[MAKE_RUN].result()
