"""Orders at a steady rate through a running shop, open loop: each checkout is sent at its
scheduled time whatever the earlier ones are doing (a checkout that cannot be sent within
:data:`LATE_AFTER` of it, every connection busy, is counted late), and each order is paid
``pay_after`` seconds after its 201, at the development payment gateway, which records the
charge and notifies payment-service's signed webhook, as ``shopctl demo`` pays.

Two latencies per order, each on the wall clock the SMTP sink's files are stamped with:

- order → confirmation: from the checkout's 201 to its confirmation reaching the sink;
- webhook → receipt: from the gateway's answer (which comes once the webhook has answered
  it) to the receipt reaching the sink.

The sink writes each message it takes to its folder at once, numbered in the order they
came (``00001.eml`` …): a file's modification time is the message's arrival (as the chaos
suite's invariants read it), to the file system's clock tick (a few milliseconds).
"""

from __future__ import annotations

import asyncio
import email.policy
import json
import os
import random
import re
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from email.parser import BytesHeaderParser
from pathlib import Path
from types import TracebackType
from typing import Any, Final, Protocol, Self

import aiohttp

from shop.devstack.load import Percentiles
from shop.notification.domain.emails import CONFIRMATION, RECEIPT

LATE_AFTER: Final = 0.1
"""A checkout sent later than this after its scheduled time was not sent on time."""
_SETTLE_INTERVAL: Final = 0.05
_SCAN_INTERVAL: Final = 0.05
_LOOKAHEAD: Final = 64
"""File numbers looked for past the last one found: the sink numbers a message when it
takes it and writes it just after, so a later number may be on disk first."""
_HEAD_BYTES: Final = 16 * 1024
_HEADERS_END: Final = re.compile(rb"\r?\n\r?\n")


class Window(Protocol):
    """What is measured while the load runs (CPU time): begun and ended by the load, at the
    first and past the last measured order's scheduled time."""

    def begin(self) -> None: ...

    def end(self) -> None: ...


@dataclass(slots=True)
class Order:
    due: float
    """When its checkout is to be sent (``time.perf_counter``)."""
    measured: bool
    sent: float | None = None
    answered: float | None = None
    answered_at: float | None = None
    """Wall clock of its 201 (``time.time``)."""
    number: str | None = None
    error: str | None = None
    """Why its checkout failed (a refusal, a transport error)."""
    paid_at: float | None = None
    """Wall clock of the gateway's answer, once payment-service's webhook answered."""
    payment_error: str | None = None
    confirmed_at: float | None = None
    """Wall clock of its confirmation's arrival at the SMTP sink."""
    receipted_at: float | None = None

    @property
    def confirmation_subject(self) -> str:
        return CONFIRMATION.subject.format(number=self.number)

    @property
    def receipt_subject(self) -> str:
        return RECEIPT.subject.format(number=self.number)

    @property
    def late(self) -> bool:
        return self.sent is not None and self.sent - self.due > LATE_AFTER

    @property
    def placed(self) -> bool:
        return self.number is not None

    @property
    def paid(self) -> bool:
        """Paid at the gateway, its webhook answered."""
        return self.paid_at is not None and self.payment_error is None

    def settled(self, pay: bool) -> bool:
        """Nothing more to wait for: its checkout failed, or its e-mails came."""
        if self.error is not None:
            return True
        if self.confirmed_at is None:
            return False
        return not pay or self.payment_error is not None or self.receipted_at is not None


class SinkWatch:
    """Reads the SMTP sink's folder as it fills, in a thread of its own, keeping the first
    arrival of each subject."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.arrivals: dict[str, float] = {}
        self.copies = 0
        """E-mails whose subject came before (a second e-mail about one order)."""
        self._first_unread = 1
        self._read: set[int] = set()
        self._parser = BytesHeaderParser(policy=email.policy.default)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="sink-watch", daemon=True)

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._stop.set()
        self._thread.join()

    def _watch(self) -> None:
        while not self._stop.wait(_SCAN_INTERVAL):
            self.scan()

    def scan(self) -> None:
        number, misses = self._first_unread, 0
        while misses < _LOOKAHEAD:
            if number not in self._read:
                if self._read_file(number):
                    self._read.add(number)
                    misses = 0
                else:
                    misses += 1
            number += 1
        while self._first_unread in self._read:
            self._read.discard(self._first_unread)
            self._first_unread += 1

    def _read_file(self, number: int) -> bool:
        """Whether the file ``number`` is there with its headers whole (then recorded)."""
        try:
            with (self.folder / f"{number:05d}.eml").open("rb") as file:
                head = file.read(_HEAD_BYTES)
                arrived = os.fstat(file.fileno()).st_mtime
        except FileNotFoundError:
            return False
        end = _HEADERS_END.search(head)
        if end is None:
            return False  # being written: read again on the next scan
        subject = str(self._parser.parsebytes(head[: end.end()])["Subject"] or "")
        if subject in self.arrivals:
            self.copies += 1
        else:
            self.arrivals[subject] = arrived
        return True


def emails_due(watch: SinkWatch, order: Order) -> int:
    """The e-mails of ``order`` not at the sink yet: its confirmation once it is placed, its
    receipt once it is paid."""
    if not order.placed:
        return 0
    arrivals = watch.arrivals
    confirmation = order.confirmation_subject not in arrivals
    receipt = order.paid and order.receipt_subject not in arrivals
    return confirmation + receipt


async def until_sent(
    watch: SinkWatch, orders: Sequence[Order], at_most: float
) -> tuple[float, int]:
    """Wait until the e-mails of ``orders`` have reached the sink, ``at_most`` seconds: the
    seconds waited and the e-mails still due then. Only the orders still owed an e-mail are
    looked at again: a shop catching up is not to share its cores with a scan of them all."""
    began = time.monotonic()
    waiting = list(orders)
    while True:
        waiting = [order for order in waiting if emails_due(watch, order)]
        waited = time.monotonic() - began
        if not waiting or waited >= at_most:
            return waited, sum(emails_due(watch, order) for order in waiting)
        await asyncio.sleep(_SETTLE_INTERVAL)


@dataclass(frozen=True)
class Figures:
    """Of the measured orders of one run of the load."""

    rate: float
    seconds: float
    offered: int
    placed: int
    late: int
    errors: Counter[str]
    payment_errors: Counter[str]
    checkout: Percentiles | None
    """From each checkout's scheduled time to its 201 (a late one counts its wait)."""
    order_to_confirmation: Percentiles | None
    webhook_to_receipt: Percentiles | None
    unconfirmed: int
    """Placed orders whose confirmation never came while the load waited."""
    unreceipted: int
    """Paid orders whose receipt never came while the load waited."""
    paid: int

    @classmethod
    def of(cls, orders: Sequence[Order], rate: float, seconds: float) -> Figures:
        measured = [order for order in orders if order.measured]
        placed = [order for order in measured if order.placed]
        paid = [order for order in placed if order.paid]
        return cls(
            rate=rate,
            seconds=seconds,
            offered=len(measured),
            placed=len(placed),
            late=sum(order.late for order in measured),
            errors=Counter(order.error for order in measured if order.error is not None),
            payment_errors=Counter(o.payment_error for o in placed if o.payment_error is not None),
            checkout=Percentiles.of([o.answered - o.due for o in placed if o.answered is not None]),
            order_to_confirmation=Percentiles.of(
                [
                    o.confirmed_at - o.answered_at
                    for o in placed
                    if o.confirmed_at is not None and o.answered_at is not None
                ]
            ),
            webhook_to_receipt=Percentiles.of(
                [
                    o.receipted_at - o.paid_at
                    for o in paid
                    if o.receipted_at is not None and o.paid_at is not None
                ]
            ),
            unconfirmed=sum(order.confirmed_at is None for order in placed),
            unreceipted=sum(order.receipted_at is None for order in paid),
            paid=len(paid),
        )


def _cart(catalogue: Sequence[str], chooser: random.Random) -> bytes:
    """One or two products, one of each, as the demo's customers buy."""
    skus = chooser.sample(list(catalogue), 2 if chooser.random() < 0.4 else 1)
    return json.dumps({"items": [{"sku": sku, "quantity": 1} for sku in sorted(skus)]}).encode()


@dataclass
class SteadyLoad:
    """The shop's customers: sessions to order-service's API and the gateway, open while
    used in ``async with``."""

    order_api: str
    gateway: str
    tokens: Sequence[str]
    watch: SinkWatch | None
    """None: orders are placed and never followed (a checkout measured alone)."""
    connections: int = 64
    pay_after: float = 1.0
    seed: int = 20261203
    _shop: aiohttp.ClientSession = field(init=False)
    _bank: aiohttp.ClientSession = field(init=False)
    _slots: asyncio.Semaphore = field(init=False)
    """Checkouts under way: one a connection."""
    _paying: asyncio.Semaphore = field(init=False)
    """Payments under way: their connections to the gateway are their own, so that a slow
    webhook never holds a checkout back."""
    _chooser: random.Random = field(init=False)
    _skus: list[str] = field(init=False)
    _tasks: set[asyncio.Task[None]] = field(init=False, default_factory=set)

    async def __aenter__(self) -> Self:
        timeout = aiohttp.ClientTimeout(total=60)
        self._shop = aiohttp.ClientSession(
            self.order_api, connector=aiohttp.TCPConnector(limit=self.connections), timeout=timeout
        )
        self._bank = aiohttp.ClientSession(
            self.gateway, connector=aiohttp.TCPConnector(limit=self.connections), timeout=timeout
        )
        self._slots = asyncio.Semaphore(self.connections)
        self._paying = asyncio.Semaphore(self.connections)
        self._chooser = random.Random(self.seed)
        async with self._shop.get("/v1/products") as reply:
            reply.raise_for_status()
            self._skus = [product["sku"] for product in await reply.json()]
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.abandon()
        await self._shop.close()
        await self._bank.close()

    async def offer(
        self,
        rate: float,
        seconds: float,
        *,
        warmup: float = 0.0,
        pay: bool = True,
        window: Window | None = None,
    ) -> list[Order]:
        """Checkouts at ``rate`` a second for ``warmup`` then ``seconds`` (those measured);
        returns once the last is due, its answer and payment still on the way."""
        total = round(rate * (warmup + seconds))
        first_measured = round(rate * warmup)
        start = time.perf_counter() + 0.05
        orders: list[Order] = []
        for index in range(total):
            due = start + index / rate
            await asyncio.sleep(max(0.0, due - time.perf_counter()))
            if index == first_measured and window is not None:
                window.begin()
            order = Order(due=due, measured=index >= first_measured)
            orders.append(order)
            self._spawn(self._customer(order, pay))
        await asyncio.sleep(max(0.0, start + total / rate - time.perf_counter()))
        if window is not None:
            window.end()
        return orders

    async def settle(
        self,
        orders: Sequence[Order],
        *,
        pay: bool,
        within: float,
        hopeless: Callable[[Sequence[Order]], bool] | None = None,
    ) -> None:
        """Wait until every order is settled (its e-mails came), ``within`` seconds at most,
        or until ``hopeless``, given the orders still waiting, says that waiting longer
        tells nothing more; what is still under way then is abandoned, so that the next
        load starts on its own."""
        deadline = time.perf_counter() + within
        waiting = list(orders)
        while True:
            self._match(waiting)
            waiting = [order for order in waiting if not order.settled(pay)]
            if not waiting:
                break
            if time.perf_counter() > deadline or (hopeless is not None and hopeless(waiting)):
                break
            await asyncio.sleep(_SETTLE_INTERVAL)
        await self.abandon()

    async def abandon(self) -> None:
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    def _match(self, orders: Sequence[Order]) -> None:
        if self.watch is None:
            return
        arrivals = self.watch.arrivals
        for order in orders:
            if order.number is None:
                continue
            if order.confirmed_at is None:
                order.confirmed_at = arrivals.get(order.confirmation_subject)
            if order.receipted_at is None:
                order.receipted_at = arrivals.get(order.receipt_subject)

    def _spawn(self, work: Any) -> None:
        task = asyncio.get_running_loop().create_task(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _customer(self, order: Order, pay: bool) -> None:
        body = _cart(self._skus, self._chooser)
        headers = {
            "Authorization": f"Bearer {self._chooser.choice(self.tokens)}",
            "Idempotency-Key": str(uuid.uuid4()),
            "Content-Type": "application/json",
        }
        async with self._slots:
            order.sent = time.perf_counter()
            try:
                async with self._shop.post("/v1/orders", data=body, headers=headers) as reply:
                    answer = await reply.read()
                    order.answered = time.perf_counter()
                    order.answered_at = time.time()
                    status = reply.status
            except (aiohttp.ClientError, TimeoutError) as error:
                order.error = f"{type(error).__name__}: {error}"[:120]
                return
        if status != 201:
            order.error = f"{status} {answer[:100]!r}"
            return
        placed = json.loads(answer)
        order.number = str(placed["number"])
        if pay:
            await asyncio.sleep(self.pay_after)
            await self._pay(order, placed)

    async def _pay(self, order: Order, placed: dict[str, Any]) -> None:
        """At the gateway, for the order's total: it answers once the webhook answered it."""
        charge = {
            "order_id": placed["id"],
            "amount": placed["total"],
            "currency": placed["currency"],
        }
        async with self._paying:
            try:
                async with self._bank.post("/_simulator/charges", json=charge) as reply:
                    answer = await reply.read()
                    order.paid_at = time.time()
                    status = reply.status
            except (aiohttp.ClientError, TimeoutError) as error:
                order.payment_error = f"{type(error).__name__}: {error}"[:120]
                return
        if status != 200:
            order.payment_error = f"gateway {status} {answer[:100]!r}"
            return
        refused = [a for a in json.loads(answer)["answers"] if a["status"] != 200]
        if refused:
            order.payment_error = f"webhook {refused[0]['status']} {refused[0]['body'][:100]}"
