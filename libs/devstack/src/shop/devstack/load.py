"""The demo's load generator (``shopctl demo``): realistic traffic through a shop started by
``make run``, end to end: ``orders`` checkouts (a few
customers, one or two products each, at most ``concurrency`` requests at once), each paid
at the development payment gateway (which notifies payment-service's webhook) once
payment-service has opened its payment, then
awaited until notification-service has sent both its e-mails (the confirmation and the
receipt), as its internal API tells them.

Progress counts come from the services' internal APIs (orders paid, e-mails sent) and
their workers' ``/metrics`` (retries, dead letters, counted from the demo's start). The
latencies are measured from this process's clock to the services' (``sent_at``): on one
machine, as with ``make run``, they share a clock.

With ``email_latency`` or ``email_failure`` the development SMTP sink is told to act as a
provider on a bad day (:class:`shop.simulators.mail.ProviderFaults`, a file in its mail
folder) for the demo's duration, so that the retries show.

It needs the development payment gateway and the SMTP sink's folder, which only the
devstack runs: it lives here, beside them, and never in the shop's image. It reaches the
shop as :mod:`shop.ops` does (its public APIs and the services' internal APIs).
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import random
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Final

import httpx

from shop.ops.consumers import ConsumerCounts, consumer_counts
from shop.ops.errors import OpsError
from shop.ops.frontend import (
    CartLine,
    CheckoutRefused,
    PlacedOrder,
    Product,
    order_api,
    place_order,
    products,
)
from shop.ops.internal import OperatorPort, listed_by_ids, operator_port
from shop.ops.payments import PaymentDue, due_of, pay_at_gateway
from shop.ops.settings import NOTIFICATION_SERVICE, ORDER_SERVICE, PAYMENT_SERVICE, OpsSettings
from shop.ops.tokens import customer_token

CONFIRMATION: Final = "order_confirmation"
RECEIPT: Final = "payment_receipt"
CUSTOMERS: Final = 25
"""Demo customers the orders are spread over (``demo-01@example.com`` …)."""
_METRICS_INTERVAL: Final = 1.0
_PAID: Final = frozenset({"paid", "fulfilled"})


def parse_latency(text: str) -> tuple[float, float]:
    """``0.3-3`` → (0.3, 3.0); ``1`` → (1.0, 1.0)."""
    low, dash, high = text.strip().partition("-")
    try:
        bounds = (float(low), float(high) if dash else float(low))
    except ValueError:
        raise OpsError(f"a latency is LOW-HIGH in seconds (0.3-3), not {text!r}") from None
    if not 0 <= bounds[0] <= bounds[1]:
        raise OpsError(f"a latency is 0 <= LOW <= HIGH, not {text!r}")
    return bounds


@dataclass(frozen=True, slots=True)
class Percentiles:
    """Of one latency, in seconds."""

    count: int
    p50: float
    p95: float
    p99: float
    max: float

    @classmethod
    def of(cls, values: Sequence[float]) -> Percentiles | None:
        if not values:
            return None
        ordered = sorted(values)

        def rank(p: float) -> float:  # nearest rank
            return ordered[max(0, math.ceil(p / 100 * len(ordered)) - 1)]

        return cls(len(ordered), rank(50), rank(95), rank(99), ordered[-1])


@dataclass(frozen=True, slots=True)
class DemoProgress:
    orders: int
    """How many the demo places in all."""
    placed: int
    refused: int
    """Checkouts order-service refused (out of stock, say)."""
    payments_sent: int
    paid: int
    """Orders order-service holds as paid."""
    confirmations: int
    receipts: int
    retries: int | None
    """Retries scheduled by every consumer since the demo began (None: unknown yet)."""
    dead_letters: int | None
    elapsed_seconds: float

    @property
    def emails_sent(self) -> int:
        return self.confirmations + self.receipts


@dataclass(frozen=True, slots=True)
class DemoSummary:
    orders: int
    placed: int
    refused: int
    payments_sent: int
    paid: int
    confirmations: int
    receipts: int
    retries: int
    failed_tries: int
    dead_letters: int
    seconds: float
    checkout: Percentiles | None
    order_to_confirmation: Percentiles | None
    payment_to_receipt: Percentiles | None
    problems: tuple[str, ...]
    """Why the demo is not complete, one line each (none when it is)."""

    @property
    def complete(self) -> bool:
        """Every order placed and paid, with both its e-mails sent."""
        return not self.problems


@dataclass(slots=True)
class _Order:
    index: int
    placed: PlacedOrder | None = None
    placed_at: datetime | None = None
    checkout_seconds: float | None = None
    refusal: str | None = None
    opened: asyncio.Event = field(default_factory=asyncio.Event)
    due: PaymentDue | None = None
    payment_sent_at: datetime | None = None
    paid: bool = False
    emails: dict[str, datetime] = field(default_factory=dict)

    @property
    def done(self) -> bool:
        return self.refusal is not None or {CONFIRMATION, RECEIPT} <= self.emails.keys()


class _Catalogue:
    """Picks one or two products per order, by what is in stock, and counts them off."""

    def __init__(self, on_sale: Sequence[Product], seed: int | None) -> None:
        self._stock = {p.sku: p.in_stock for p in on_sale if p.in_stock > 0}
        self._random = random.Random(seed)

    @property
    def units(self) -> int:
        return sum(self._stock.values())

    def cart(self) -> list[CartLine]:
        available = [sku for sku, left in self._stock.items() if left > 0]
        if not available:
            return []
        weights = [self._stock[sku] for sku in available]
        chosen = {self._random.choices(available, weights)[0]}
        if len(available) > 1 and self._random.random() < 0.4:
            chosen.add(self._random.choices(available, weights)[0])
        for sku in chosen:
            self._stock[sku] -= 1
        return [CartLine(sku, 1) for sku in sorted(chosen)]


class _Demo:
    def __init__(
        self,
        settings: OpsSettings,
        *,
        count: int,
        concurrency: int,
        within: float,
        poll_interval: float,
        on_progress: Callable[[DemoProgress], None] | None,
        seed: int | None,
    ) -> None:
        self.settings = settings
        self.orders = [_Order(index) for index in range(count)]
        self.slots = asyncio.Semaphore(concurrency)
        self.within = within
        self.poll_interval = poll_interval
        self.on_progress = on_progress
        self.seed = seed
        self.started = time.monotonic()
        self.baseline: dict[str, ConsumerCounts] = {}
        self.latest: dict[str, ConsumerCounts] | None = None
        self.problems: list[str] = []
        run = uuid.uuid4().hex[:6]
        self.tokens = [
            customer_token(settings, f"demo-{run}-{n:02d}", f"demo-{n:02d}@example.com")
            for n in range(1, CUSTOMERS + 1)
        ]

    # -- the run ----------------------------------------------------------------------

    async def run(self) -> DemoSummary:
        self.baseline = await _counts(self.settings)
        async with order_api(self.settings) as shop:
            catalogue = _Catalogue(await products(shop, self.settings), self.seed)
            if catalogue.units < len(self.orders):
                raise OpsError(
                    f"the catalogue has {catalogue.units} items in stock, too few for "
                    f"{len(self.orders)} orders"
                )
            customers = [self._customer(o, shop, catalogue) for o in self.orders]
            tasks = [asyncio.create_task(c) for c in customers]
            try:
                await self._follow(tasks)
            finally:
                for task in tasks:
                    task.cancel()
                await asyncio.gather(*tasks, return_exceptions=True)
        return self._summary()

    async def _customer(
        self,
        order: _Order,
        shop: httpx.AsyncClient,
        catalogue: _Catalogue,
    ) -> None:
        lines = catalogue.cart()
        if not lines:
            order.refusal = "out of stock before checkout"
            return
        token = self.tokens[order.index % len(self.tokens)]
        async with self.slots:
            began = time.perf_counter()
            try:
                order.placed = await place_order(shop, self.settings, token, lines)
            except CheckoutRefused as refused:
                order.refusal = f"{refused.status} {refused.title}"
                return
            order.checkout_seconds = time.perf_counter() - began
            order.placed_at = datetime.now(UTC)
        await order.opened.wait()
        assert order.due is not None
        async with self.slots:
            order.payment_sent_at = datetime.now(UTC)
            answers = await pay_at_gateway(self.settings, order.due)
        refused_payment = [a for a in answers if not a.accepted]
        if refused_payment:
            first = refused_payment[0]
            self.problems.append(
                f"payment-service answered {first.status} to the payment of "
                f"{order.due.order_number}: {first.body[:200]}"
            )

    async def _follow(self, tasks: list[asyncio.Task[None]]) -> None:
        """Poll the services' internal APIs until every order is done or the time is up;
        a customer's failure (the shop unreachable, say) ends the demo with it."""
        deadline = self.started + self.within
        last_metrics = 0.0
        async with (
            operator_port(self.settings, ORDER_SERVICE) as orders,
            operator_port(self.settings, PAYMENT_SERVICE) as payments,
            operator_port(self.settings, NOTIFICATION_SERVICE) as notifications,
        ):
            while True:
                for task in tasks:
                    failure = task.exception() if task.done() and not task.cancelled() else None
                    if failure is not None:
                        raise failure
                await self._look(orders, payments, notifications)
                now = time.monotonic()
                if now - last_metrics >= _METRICS_INTERVAL:
                    last_metrics = now
                    await self._read_metrics()
                self._report()
                if all(order.done for order in self.orders):
                    await self._read_metrics()
                    self._report()
                    return
                if now >= deadline:
                    await self._read_metrics()
                    self.problems.append(f"stopped waiting after {self.within:g} s")
                    return
                await asyncio.sleep(self.poll_interval)

    async def _look(
        self, orders: OperatorPort, payments: OperatorPort, notifications: OperatorPort
    ) -> None:
        placed = {o.placed.id: o for o in self.orders if o.placed is not None}
        unopened = [i for i, o in placed.items() if o.due is None]
        if unopened:
            for payment in await listed_by_ids(
                payments, "/internal/v1/payments", name="order_ids", ids=unopened, field="payments"
            ):
                order = placed[uuid.UUID(payment["order_id"])]
                order.due = due_of(payment)
                order.opened.set()
        unpaid = [i for i, o in placed.items() if not o.paid and o.payment_sent_at is not None]
        if unpaid:
            for row in await listed_by_ids(
                orders, "/internal/v1/orders", name="ids", ids=unpaid, field="orders"
            ):
                if row["status"] in _PAID:
                    placed[uuid.UUID(row["id"])].paid = True
        unmailed = [i for i, o in placed.items() if len(o.emails) < 2]
        if unmailed:
            for row in await listed_by_ids(
                notifications, "/internal/v1/emails", name="order_ids", ids=unmailed, field="emails"
            ):
                if row["kind"] in (CONFIRMATION, RECEIPT):
                    sent_at = datetime.fromisoformat(row["sent_at"])
                    placed[uuid.UUID(row["order_id"])].emails[row["kind"]] = sent_at

    async def _read_metrics(self) -> None:
        # A worker restarting does not answer for a moment: the next look counts again.
        with contextlib.suppress(OpsError):
            self.latest = await _counts(self.settings)

    def _since_start(self, what: str) -> int | None:
        if self.latest is None:
            return None
        total = 0
        for group, counts in self.latest.items():
            before = self.baseline.get(group)
            now_value = int(getattr(counts, what))
            # A worker restarted meanwhile starts its counters from zero again.
            before_value = int(getattr(before, what)) if before is not None else 0
            total += now_value - before_value if now_value >= before_value else now_value
        return total

    def progress(self) -> DemoProgress:
        return DemoProgress(
            orders=len(self.orders),
            placed=sum(o.placed is not None for o in self.orders),
            refused=sum(o.refusal is not None for o in self.orders),
            payments_sent=sum(o.payment_sent_at is not None for o in self.orders),
            paid=sum(o.paid for o in self.orders),
            confirmations=sum(CONFIRMATION in o.emails for o in self.orders),
            receipts=sum(RECEIPT in o.emails for o in self.orders),
            retries=self._since_start("retried"),
            dead_letters=self._since_start("dead_lettered"),
            elapsed_seconds=time.monotonic() - self.started,
        )

    def _report(self) -> None:
        if self.on_progress is not None:
            self.on_progress(self.progress())

    # -- the summary ------------------------------------------------------------------

    def _summary(self) -> DemoSummary:
        progress = self.progress()
        problems = list(self.problems)
        refusals: dict[str, int] = {}
        for order in self.orders:
            if order.refusal is not None:
                refusals[order.refusal] = refusals.get(order.refusal, 0) + 1
        problems += [f"{n} checkout(s) refused: {why}" for why, n in sorted(refusals.items())]
        for what, done, of in (
            ("paid", progress.paid, progress.placed),
            ("confirmed by e-mail", progress.confirmations, progress.placed),
            ("sent a receipt", progress.receipts, progress.placed),
        ):
            if done < of:
                problems.append(f"{of - done} of {of} placed orders not {what}")
        confirmation = [
            (o.emails[CONFIRMATION] - o.placed_at).total_seconds()
            for o in self.orders
            if o.placed_at is not None and CONFIRMATION in o.emails
        ]
        receipt = [
            (o.emails[RECEIPT] - o.payment_sent_at).total_seconds()
            for o in self.orders
            if o.payment_sent_at is not None and RECEIPT in o.emails
        ]
        return DemoSummary(
            orders=progress.orders,
            placed=progress.placed,
            refused=progress.refused,
            payments_sent=progress.payments_sent,
            paid=progress.paid,
            confirmations=progress.confirmations,
            receipts=progress.receipts,
            retries=progress.retries or 0,
            failed_tries=self._since_start("failed") or 0,
            dead_letters=progress.dead_letters or 0,
            seconds=progress.elapsed_seconds,
            checkout=Percentiles.of(
                [o.checkout_seconds for o in self.orders if o.checkout_seconds is not None]
            ),
            order_to_confirmation=Percentiles.of([max(0.0, s) for s in confirmation]),
            payment_to_receipt=Percentiles.of([max(0.0, s) for s in receipt]),
            problems=tuple(problems),
        )


async def _counts(settings: OpsSettings) -> dict[str, ConsumerCounts]:
    return {counts.group: counts for counts in await consumer_counts(settings)}


async def run_demo(
    settings: OpsSettings,
    *,
    orders: int = 200,
    concurrency: int = 16,
    email_latency: tuple[float, float] | None = None,
    email_failure: float | None = None,
    within: float = 600.0,
    poll_interval: float = 0.25,
    on_progress: Callable[[DemoProgress], None] | None = None,
    seed: int | None = None,
) -> DemoSummary:
    """Run the demo against the running shop and say how it went. ``on_progress`` is
    called after each look at the shop (a few times a second). Waits at most ``within``
    seconds in all; an order not done by then is named in ``DemoSummary.problems``."""
    if orders < 1:
        raise OpsError("--orders must be at least 1")
    if concurrency < 1:
        raise OpsError("--concurrency must be at least 1")
    if email_failure is not None and not 0 <= email_failure <= 1:
        raise OpsError(f"--email-failure is a share between 0 and 1, not {email_failure}")
    demo = _Demo(
        settings,
        count=orders,
        concurrency=concurrency,
        within=within,
        poll_interval=poll_interval,
        on_progress=on_progress,
        seed=seed,
    )
    if email_latency is None and email_failure is None:
        return await demo.run()
    if settings.mail_dir is None:
        raise OpsError(
            "e-mail faults go to the SMTP sink's folder: set SHOP_OPS_MAIL_DIR (make run's is "
            ".devstack/mail)"
        )
    # The development SMTP sink's faults: imported only when asked for.
    from shop.simulators.mail import ProviderFaults  # noqa: PLC0415

    try:
        faults = ProviderFaults(
            latency=email_latency or (0.0, 0.0), failure_rate=email_failure or 0.0
        )
    except ValueError as error:
        raise OpsError(f"e-mail faults: {error}") from error
    faults.write(settings.mail_dir)
    try:
        return await demo.run()
    finally:
        ProviderFaults.clear(settings.mail_dir)
