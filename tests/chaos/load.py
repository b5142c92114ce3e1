"""The traffic the chaos suite puts through the shop while it is under fire, as a frontend
and customers paying at the development payment gateway would send it: orders placed at a
steady rate, most of them paid (in the shop's format or Midtrans', some notifications sent
twice), a few cancelled by their customer, a few never paid (they expire), a few paid only
after their window closed (the money is refunded), a few paid the wrong amount (deliberate
poison: their payments go to the dead-letter queue, and their orders expire).

A request that dies with the process answering it (the suite kills APIs mid-request)
is sent again as a client would: a checkout with the same ``Idempotency-Key``, a webhook
with the same event (the gateway sends it again), a cancellation by asking again. A refusal
(4xx) is never retried: it fails the run, since none of this traffic is invalid."""

from __future__ import annotations

import asyncio
import random
import time
import uuid
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Final, Literal

import asyncpg
import httpx

from shop.ops.payments import PaymentDue
from shop.ops.settings import OpsSettings
from shop.ops.tokens import customer_token
from shop.simulators import gateway

Plan = Literal["pay", "cancel", "wrong_amount", "expire", "late"]
SKUS: Final = (
    "CLEANSER-GEL-150", "SERUM-NIA-30", "SUN-SPF50-50", "MOIST-GEL-50", "TONER-HA-150",
    "LIP-BALM-10",
)  # fmt: skip
CUSTOMERS: Final = 20
_RETRY_PAUSE: Final = 0.3
_GIVE_UP_AFTER: Final = 300.0
"""A request still failing after this long means the shop did not come back: fail."""


async def _unless_slow(
    call: Awaitable[list[gateway.Answer]], *, sent_again: bool
) -> list[gateway.Answer]:
    """The gateway's answer, or none when it took too long to give one: it sends again what
    a killed payment-api left unanswered, which may outlast the call. A call that is
    ``sent_again`` (notifications sent again, word for word) may time out any way; a
    payment only once sent (a read timed out), since it is never made twice: the gateway
    records it, if not yet, then soon."""
    slow = httpx.TimeoutException if sent_again else httpx.ReadTimeout
    try:
        return await call
    except slow:
        return []


class ShopRefused(AssertionError):
    """The shop answered a valid request with a refusal it should not give."""


@dataclass
class PlannedOrder:
    index: int
    plan: Plan
    provider: gateway.Format
    repeat: int
    """How often the gateway sends each notification (2: a duplicate webhook)."""
    lines: list[tuple[str, int]]
    token: str
    idempotency_key: str = field(default_factory=lambda: str(uuid.uuid4()))
    id: uuid.UUID | None = None
    number: str | None = None
    due: PaymentDue | None = None
    settled: bool = False
    """Its last request answered: paid, cancelled or paid wrong, as planned."""


@dataclass
class LoadFigures:
    requests: Counter[str] = field(default_factory=Counter)
    cut: Counter[str] = field(default_factory=Counter)
    """Requests that died with their connection (their API killed under them), by API."""
    refused: Counter[str] = field(default_factory=Counter)
    """Tries that found no API listening (it was down), by API."""
    server_errors: list[str] = field(default_factory=list)
    """Answers with a 5xx status (``api: status body``) other than a 503: a live API never
    gives one."""
    unavailable: list[tuple[str, float, float]] = field(default_factory=list)
    """503s (an API whose database is away says to send again), by API, with the wall-clock
    times their request left and their answer was read: the API answered in between (a
    client may read an answer late, a request sent before the outage be answered in it)."""
    in_flight: Counter[str] = field(default_factory=Counter)
    begun: Counter[str] = field(default_factory=Counter)
    """Requests begun so far, by API (a kill waits for one begun after its API froze)."""


def plan_orders(
    count: int, settings: OpsSettings, *, wrong_amounts: int, seed: int
) -> list[PlannedOrder]:
    """``count`` orders: ``wrong_amounts`` of them paid wrong, of the rest one in twelve
    cancelled, one in twenty-five never paid and one in twenty-five paid after its window,
    the others paid; half in Midtrans' format, one in five of their notifications sent
    twice."""
    chooser = random.Random(seed)
    run = uuid.uuid4().hex[:6]
    tokens = [
        customer_token(settings, f"chaos-{run}-{n:02d}", f"chaos-{n:02d}@example.com")
        for n in range(CUSTOMERS)
    ]
    wrong = set(chooser.sample(range(count), wrong_amounts))
    orders = []
    for index in range(count):
        plan: Plan = "wrong_amount" if index in wrong else "pay"
        if plan == "pay":
            plan = _unless_otherwise(chooser.random())
        skus = chooser.sample(SKUS, chooser.choice((1, 1, 2)))
        orders.append(
            PlannedOrder(
                index=index,
                plan=plan,
                provider=chooser.choice(list(gateway.Format)),
                repeat=2 if chooser.random() < 0.2 else 1,
                lines=[(sku, chooser.choice((1, 1, 2))) for sku in sorted(skus)],
                token=tokens[index % CUSTOMERS],
            )
        )
    return orders


def _unless_otherwise(draw: float) -> Plan:
    for plan, share in (("cancel", 1 / 12), ("expire", 1 / 25), ("late", 1 / 25)):
        if draw < share:
            return plan  # type: ignore[return-value]
        draw -= share
    return "pay"


class Load:
    """Runs the planned orders at ``rate`` checkouts a second, each to its end."""

    def __init__(
        self,
        settings: OpsSettings,
        orders: list[PlannedOrder],
        rate: float,
        *,
        payment_database_url: str = "",
    ) -> None:
        """``payment_database_url``: payment-service's own database, where the customers who
        let the window pass see their payment expire (the suite reads the real stores)."""
        self.settings = settings
        self.payment_database_url = payment_database_url
        self.orders = orders
        self.rate = rate
        self.figures = LoadFigures()
        self._expired: dict[uuid.UUID, asyncio.Future[None]] = {}
        self._launched = 0
        self._ended = False
        self._held: tuple[int, asyncio.Event] | None = None

    def hold_the_last(self, share: float, until: asyncio.Event) -> None:
        """Keep the last ``share`` of the checkouts until ``until`` is set, then send them
        (late ones at once): a blow that needs checkouts under way (the broker's freeze)
        finds them however late the blows before it ran."""
        self._held = (len(self.orders) - max(1, int(len(self.orders) * share)), until)

    async def run(self) -> None:
        async with httpx.AsyncClient(base_url=self.settings.order_api_url, timeout=20) as shop:
            watcher = asyncio.create_task(self._watch_payments_expire())
            customers = []
            try:
                began = time.monotonic()
                for order in self.orders:
                    if watcher.done():
                        break  # it failed: said below
                    # An open loop: the next checkout leaves on time, however slow the last.
                    await asyncio.sleep(
                        max(0.0, began + order.index / self.rate - time.monotonic())
                    )
                    if self._held is not None and order.index >= self._held[0]:
                        await self._held[1].wait()
                    customers.append(asyncio.create_task(self._customer(order, shop)))
                    self._launched += 1
                everyone: asyncio.Future[list[None]] = asyncio.gather(*customers)
                # The watcher runs until cancelled: done first, it failed, and the customers
                # waiting for their payments to expire would wait for ever.
                either: list[asyncio.Future[Any]] = [everyone, watcher]
                await asyncio.wait(either, return_when=asyncio.FIRST_COMPLETED)
                if watcher.done():
                    everyone.cancel()
                    watcher.result()
                    raise AssertionError("the watch on payment-service's payments stopped")
                everyone.result()
            finally:
                self._ended = True
                for task in [*customers, watcher]:
                    task.cancel()
                await asyncio.gather(*customers, watcher, return_exceptions=True)

    def progress(self) -> float:
        """The share of the checkouts that have left (0 to 1); 1 once the load has ended,
        however it ended."""
        return 1.0 if self._ended else self._launched / len(self.orders)

    def placed(self) -> int:
        return sum(order.id is not None for order in self.orders)

    # -- one customer ---------------------------------------------------------------------

    async def _customer(self, order: PlannedOrder, shop: httpx.AsyncClient) -> None:
        await self._checkout(order, shop)
        assert order.id is not None
        if order.plan == "cancel":
            await self._cancel(order, shop)
        elif order.plan in {"expire", "late"}:
            # The customer lets the window pass (the load is not over before its deadline);
            # one who pays late does so once the shop has given up on the order.
            loop = asyncio.get_running_loop()
            await self._expired.setdefault(order.id, loop.create_future())
            if order.plan == "late":
                await self._pay(order)
        else:
            # At once, as a customer pays at the gateway: payment-service may not have
            # opened the payment yet (its notification then waits for it).
            await self._pay(order)
            if order.plan == "wrong_amount":  # never paid right: the window passes too
                loop = asyncio.get_running_loop()
                await self._expired.setdefault(order.id, loop.create_future())
        order.settled = True

    async def _checkout(self, order: PlannedOrder, shop: httpx.AsyncClient) -> None:
        body = {"items": [{"sku": sku, "quantity": quantity} for sku, quantity in order.lines]}
        headers = {
            "Authorization": f"Bearer {order.token}",
            "Idempotency-Key": order.idempotency_key,
        }
        reply = await self._until_answered(
            "order-api", lambda: shop.post("/v1/orders", json=body, headers=headers)
        )
        if reply.status_code != 201:
            raise ShopRefused(f"checkout {order.index}: {reply.status_code} {reply.text[:300]}")
        placed = reply.json()
        order.id = uuid.UUID(placed["id"])
        order.number = placed["number"]
        order.due = PaymentDue(
            order.id, order.number, placed["total"], placed["currency"], placed["status"]
        )

    async def _cancel(self, order: PlannedOrder, shop: httpx.AsyncClient) -> None:
        headers = {"Authorization": f"Bearer {order.token}"}
        reply = await self._until_answered(
            "order-api", lambda: shop.post(f"/v1/orders/{order.id}/cancel", headers=headers)
        )
        # A 409 after a cut request: the first try had cancelled it before the API died.
        if reply.status_code == 409 and "cancelled" in reply.text:
            return
        if reply.status_code != 200:
            raise ShopRefused(f"cancel {order.number}: {reply.status_code} {reply.text[:300]}")

    async def _pay(self, order: PlannedOrder) -> None:
        """The customer pays at the development gateway, which records the charge and
        notifies payment-service (sending again, with backoff, what was not answered). What
        payment-service's webhook still had not taken, the gateway is asked to send again,
        word for word, until it is taken: the same events, so never paid twice."""
        assert order.due is not None
        assert order.id is not None
        due = order.due
        wrong = due.amount + 1 if order.plan == "wrong_amount" else None
        # The gateway posts once and tells each answer as it came: a request that the
        # payment-api's death cut is seen and counted here, and sent again below.
        sent_at = time.time()
        answers = await self._through_gateway(
            gateway.pay_at_gateway(
                self.settings.gateway_url,
                gateway.Payment(due.order_id, due.amount, due.currency),
                fmt=order.provider,
                amount=wrong,
                times=order.repeat,
                resend=False,
            )
        )
        deadline = time.monotonic() + _GIVE_UP_AFTER
        recorded = True
        while True:
            self._count_webhook_answers(answers, sent_at)
            refused = [a for a in answers if 400 <= a.status < 500]
            if refused:
                raise ShopRefused(f"webhook of {order.number}: {refused[0]}")
            if answers and all(answer.accepted for answer in answers):
                return
            if time.monotonic() > deadline:
                raise AssertionError(
                    f"payment-api gave no answer for {_GIVE_UP_AFTER:g} s"
                    if recorded
                    else f"the gateway never recorded the payment of {order.number}"
                )
            await asyncio.sleep(_RETRY_PAUSE)
            sent_at = time.time()
            again = await self._notified_again(order.id)
            recorded = again is not None
            answers = again or []

    async def _notified_again(self, order_id: uuid.UUID) -> list[gateway.Answer] | None:
        """The answers to the charge's notifications, sent again word for word; None while
        the gateway has not recorded the charge yet (slow under fire, it had not taken in
        the payment when the customer's call to it timed out), and then nothing is posted
        to payment-api (a kill waiting for a request under way must not count one)."""
        try:
            await gateway.charge_of(self.settings.gateway_url, order_id)
        except httpx.TimeoutException:
            return []  # the gateway slow under fire: asked again after the pause
        except httpx.HTTPStatusError as error:
            if error.response.status_code != httpx.codes.NOT_FOUND:
                raise
            return None
        return await self._through_gateway(
            gateway.notify_again(self.settings.gateway_url, order_id, every=True, resend=False),
            sent_again=True,
        )

    async def _through_gateway(
        self, call: Awaitable[list[gateway.Answer]], *, sent_again: bool = False
    ) -> list[gateway.Answer]:
        """A gateway call, while which a payment-api request is under way (the gateway
        posts to it)."""
        self.figures.in_flight["payment-api"] += 1
        self.figures.begun["payment-api"] += 1
        try:
            return await _unless_slow(call, sent_again=sent_again)
        finally:
            self.figures.in_flight["payment-api"] -= 1

    def _count_webhook_answers(self, answers: list[gateway.Answer], sent_at: float) -> None:
        """``answers`` to a gateway call made at ``sent_at``, returned now (each 503 came
        in between)."""
        api = "payment-api"
        self.figures.requests[api] += len(answers)
        for answer in answers:
            # The gateway's post to a payment-api killed under it fails as a reset, or, when
            # it lands a moment after the kill, as a refused connection: from here both are
            # the request that the kill cut (the gateway call was under way).
            if answer.status == gateway.UNDELIVERED:
                self.figures.cut[api] += 1
            elif answer.status == 503:
                self.figures.unavailable.append((api, sent_at, time.time()))
            elif answer.status >= 500:
                self.figures.server_errors.append(f"{api}: {answer.status} {answer.body[:200]}")

    async def _until_answered(
        self, api: str, send: Callable[[], Awaitable[httpx.Response]]
    ) -> httpx.Response:
        """Send until the API answers other than 5xx, as a client retrying a request whose
        server died under it, or that was told to send it again (a 503 with Retry-After):
        every request here is safe to repeat."""
        deadline = time.monotonic() + _GIVE_UP_AFTER
        while True:
            self.figures.requests[api] += 1
            self.figures.in_flight[api] += 1
            self.figures.begun[api] += 1
            sent_at = time.time()  # a 503 came between this and when it is read
            try:
                reply = await send()
            except httpx.ConnectError:
                reply = None
                self.figures.refused[api] += 1
            except httpx.TransportError:
                reply = None
                self.figures.cut[api] += 1
            finally:
                self.figures.in_flight[api] -= 1
            if reply is not None and reply.status_code < 500:
                return reply
            if reply is not None and reply.status_code == 503 and "retry-after" in reply.headers:
                self.figures.unavailable.append((api, sent_at, time.time()))
            elif reply is not None:
                self.figures.server_errors.append(f"{api}: {reply.status_code} {reply.text[:200]}")
            if time.monotonic() > deadline:
                raise AssertionError(f"{api} gave no answer for {_GIVE_UP_AFTER:g} s")
            await asyncio.sleep(_RETRY_PAUSE)

    # -- customers who let the window pass wait for their payment to expire ------------

    async def _watch_payments_expire(self) -> None:
        """Tell each customer waiting for it that its payment expired, through a Postgres
        restart (connected again, as any client would)."""
        while True:
            try:
                payments_db = await asyncpg.connect(self.payment_database_url, timeout=10)
                try:
                    while True:
                        await self._tell_the_waiting(payments_db)
                        await asyncio.sleep(0.25)
                finally:
                    await payments_db.close()
            except (
                TimeoutError,
                OSError,
                asyncpg.PostgresError,
                asyncpg.InterfaceError,
                # A fetch cut by the restart leaves the connection in no state to go on.
                asyncpg.InternalClientError,
            ):
                await asyncio.sleep(0.5)

    async def _tell_the_waiting(self, payments_db: asyncpg.Connection) -> None:
        waiting = [i for i, expired in self._expired.items() if not expired.done()]
        if waiting:
            for row in await payments_db.fetch(
                "SELECT order_id FROM payments "
                "WHERE order_id = ANY($1::uuid[]) AND status = 'expired'",
                waiting,
            ):
                self._expired[row["order_id"]].set_result(None)
