"""Flow control per provider: the circuit breaker (its states, and messages held in place
while it is open) and the rate limit."""

from __future__ import annotations

import asyncio
import functools

from structlog.testing import capture_logs

from shop.contracts import OrderCreated, encode, examples, wrap
from shop.messaging import MessageContext, PermanentError, Router
from shop.messaging.breaker import (
    BreakerSettings,
    BreakerState,
    CircuitBreaker,
    calling_provider,
    provider_answered,
)
from shop.messaging.errors import ProviderUnavailable
from shop.messaging.message import Delivery
from shop.messaging.metrics import Metrics
from shop.messaging.outcome import Ack, DeadLetter, Retry
from shop.messaging.pipeline import Pipeline
from shop.messaging.rate_limit import SLOW_DOWN, SLOWEST, TokenBucket

SETTINGS = BreakerSettings(threshold=3, pause=0.1, longest_pause=0.4)


def breaker(transitions: list[BreakerState] | None = None) -> CircuitBreaker:
    seen = transitions if transitions is not None else []
    return CircuitBreaker("smtp", SETTINGS, on_transition=lambda _, state: seen.append(state))


async def test_it_opens_at_the_threshold_of_consecutive_failures_and_not_before() -> None:
    transitions: list[BreakerState] = []
    smtp = breaker(transitions)
    for _ in range(2):
        assert await smtp.admit() is False
        await smtp.unreachable(probe=False)
    assert smtp.state is BreakerState.CLOSED
    await smtp.reached()  # a success between failures starts the count again
    for _ in range(2):
        await smtp.unreachable(probe=False)
    assert smtp.state is BreakerState.CLOSED
    await smtp.unreachable(probe=False)
    assert smtp.state is BreakerState.OPEN
    assert transitions == [BreakerState.OPEN]


async def test_while_open_calls_wait_then_one_probes_and_its_success_lets_all_go() -> None:
    transitions: list[BreakerState] = []
    smtp = breaker(transitions)
    for _ in range(3):
        await smtp.unreachable(probe=False)
    loop = asyncio.get_running_loop()
    started = loop.time()
    waiting = [asyncio.create_task(smtp.admit()) for _ in range(5)]
    done, _ = await asyncio.wait(waiting, return_when=asyncio.FIRST_COMPLETED)
    assert loop.time() - started >= 0.09  # the pause
    assert [task.result() for task in done] == [True]  # one probe
    await asyncio.sleep(0.05)
    assert sum(task.done() for task in waiting) == 1, "the others wait for the probe"
    await smtp.reached()
    results = await asyncio.gather(*waiting)
    assert sorted(results) == [False, False, False, False, True]
    assert transitions == [BreakerState.OPEN, BreakerState.HALF_OPEN, BreakerState.CLOSED]


async def test_a_failed_probe_opens_it_again_for_twice_the_pause_up_to_the_ceiling() -> None:
    smtp = breaker()
    for _ in range(3):
        await smtp.unreachable(probe=False)
    loop = asyncio.get_running_loop()
    pauses = []
    for _ in range(4):
        started = loop.time()
        assert await smtp.admit() is True
        pauses.append(loop.time() - started)
        await smtp.unreachable(probe=True)
    assert smtp.state is BreakerState.OPEN
    # 0.1 s first, then doubled (0.2, 0.4) and held at the ceiling (0.4); a busy event
    # loop may add to a pause, never take from it.
    for pause, expected in zip(pauses, [0.1, 0.2, 0.4, 0.4], strict=True):
        assert expected - 0.01 <= pause < expected + 0.09


async def test_a_probe_that_ends_without_telling_hands_the_probe_on_at_once() -> None:
    smtp = breaker()
    for _ in range(3):
        await smtp.unreachable(probe=False)
    assert await smtp.admit() is True
    await smtp.untold(probe=True)
    assert smtp.state is BreakerState.OPEN
    assert await asyncio.wait_for(smtp.admit(), 0.05) is True


def delivery(order: int) -> Delivery:
    event = examples.examples()[OrderCreated]
    body = encode(wrap(event, key=f"order-{order}"))
    return Delivery(body=body, headers={}, source="shop-order-created", attempt=1)


async def test_messages_wait_in_place_while_the_provider_is_away_and_spend_no_attempts() -> None:
    provider_back = asyncio.Event()
    calls = 0

    async def send(event: OrderCreated, ctx: MessageContext) -> None:
        nonlocal calls
        calls += 1
        if not provider_back.is_set():
            raise ProviderUnavailable("smtp", "connection refused")
        provider_answered()

    router = Router("notification-service")
    router.subscriber(OrderCreated, transactional=False, max_attempts=2, provider="smtp")(send)
    metrics = Metrics()
    smtp = CircuitBreaker("smtp", SETTINGS, on_transition=metrics.breaker_changed)
    pipeline = Pipeline(router, time_scale=0.01, breakers={"smtp": smtp})

    # Below the threshold a failure is an ordinary try: it spends an attempt.
    first = [await pipeline.process(delivery(n)) for n in range(2)]
    assert all(isinstance(outcome, Retry) for outcome in first)
    # The third opens the breaker: it and every later message wait, whatever their count.
    handling = [asyncio.create_task(pipeline.process(delivery(n))) for n in range(2, 12)]
    await asyncio.sleep(1.0)  # several probes, each failing, the pause doubling
    assert not any(task.done() for task in handling)
    assert smtp.state is BreakerState.OPEN
    calls_while_away = calls
    assert calls_while_away < 12, "only probes reach the provider while it is away"
    provider_back.set()
    outcomes = await asyncio.wait_for(asyncio.gather(*handling), 2)
    assert outcomes == [Ack()] * 10
    assert smtp.state is BreakerState.CLOSED
    gauge = metrics.registry.get_sample_value("messaging_breaker_state", {"provider": "smtp"})
    assert gauge == 0
    opened = metrics.registry.get_sample_value(
        "messaging_breaker_transitions_total", {"provider": "smtp", "state": "open"}
    )
    assert opened is not None
    assert opened >= 2  # opened, then again after failed probes


async def test_a_refusal_of_one_message_says_the_provider_is_there() -> None:
    async def refuse(event: OrderCreated, ctx: MessageContext) -> None:
        provider_answered()
        raise PermanentError("no such mailbox")

    router = Router("notification-service")
    router.subscriber(OrderCreated, transactional=False, provider="smtp")(refuse)
    smtp = breaker()
    for _ in range(3):
        await smtp.unreachable(probe=False)
    pipeline = Pipeline(router, time_scale=0.01, breakers={"smtp": smtp})
    outcome = await asyncio.wait_for(pipeline.process(delivery(1)), 1)
    assert isinstance(outcome, DeadLetter)
    assert smtp.state is BreakerState.CLOSED


async def test_a_rate_limit_spaces_the_calls_in_the_order_they_asked() -> None:
    bucket = TokenBucket(rate=100)
    loop = asyncio.get_running_loop()
    started = loop.time()
    order: list[int] = []

    async def call(number: int) -> None:
        await bucket.take()
        order.append(number)

    await asyncio.gather(*(call(n) for n in range(21)))
    assert loop.time() - started >= 0.19  # 20 gaps of 10 ms after the first call
    assert order == list(range(21))


async def test_a_message_handled_without_reaching_the_provider_leaves_the_breaker_open() -> None:
    # A duplicate the inbox drops, an e-mail found sent already, one that cannot be
    # written: none of them called the provider, so none says it is back.
    async def nothing_to_send(event: OrderCreated, ctx: MessageContext) -> None:
        return None

    router = Router("notification-service")
    router.subscriber(OrderCreated, transactional=False, provider="smtp")(nothing_to_send)
    smtp = breaker()
    for _ in range(3):
        await smtp.unreachable(probe=False)
    pipeline = Pipeline(router, time_scale=0.01, breakers={"smtp": smtp})
    assert await asyncio.wait_for(pipeline.process(delivery(1)), 1) == Ack()
    assert smtp.state is not BreakerState.CLOSED


async def test_a_handler_that_reached_the_provider_closes_the_breaker() -> None:
    async def send(event: OrderCreated, ctx: MessageContext) -> None:
        provider_answered()

    router = Router("notification-service")
    router.subscriber(OrderCreated, transactional=False, provider="smtp")(send)
    smtp = breaker()
    for _ in range(3):
        await smtp.unreachable(probe=False)
    pipeline = Pipeline(router, time_scale=0.01, breakers={"smtp": smtp})
    assert await asyncio.wait_for(pipeline.process(delivery(1)), 1) == Ack()
    assert smtp.state is BreakerState.CLOSED


async def test_a_provider_that_says_when_to_come_back_holds_its_messages_that_long_at_once() -> (
    None
):
    # A 429 or a 503 with Retry-After: no need to fail the threshold's tries first, nor to
    # spend this message's only attempt.
    loop = asyncio.get_running_loop()
    calls: list[float] = []

    async def ask(event: OrderCreated, ctx: MessageContext) -> None:
        calls.append(loop.time())
        if len(calls) == 1:
            raise ProviderUnavailable("gateway", "answered 429", retry_after=0.3)
        provider_answered()

    router = Router("payment-service")
    router.subscriber(OrderCreated, transactional=False, max_attempts=1, provider="gateway")(ask)
    transitions: list[BreakerState] = []
    gateway = CircuitBreaker(
        "gateway", SETTINGS, on_transition=lambda _, state: transitions.append(state)
    )
    pipeline = Pipeline(router, time_scale=0.01, breakers={"gateway": gateway})
    assert await asyncio.wait_for(pipeline.process(delivery(1)), 2) == Ack()
    assert calls[1] - calls[0] >= 0.29
    assert transitions == [BreakerState.OPEN, BreakerState.HALF_OPEN, BreakerState.CLOSED]


async def test_a_retry_after_longer_than_the_ceiling_is_cut_to_it() -> None:
    smtp = CircuitBreaker("smtp", BreakerSettings(threshold=3, pause=0.1, longest_retry_after=0.2))
    await smtp.told_to_wait(3600, probe=False)
    assert smtp.state is BreakerState.OPEN
    assert await asyncio.wait_for(smtp.admit(), 1) is True  # the probe, 0.2 s on


async def test_too_fast_halves_the_rate_which_climbs_back_with_each_call_taken() -> None:
    refusals = 1

    async def send(event: OrderCreated, ctx: MessageContext) -> None:
        nonlocal refusals
        if refusals:
            refusals -= 1
            raise ProviderUnavailable("smtp", "451 4.7.0 slow down", too_fast=True)
        provider_answered()

    router = Router("notification-service")
    router.subscriber(OrderCreated, transactional=False, provider="smtp")(send)
    smtp = breaker()
    bucket = TokenBucket(rate=2000)
    pipeline = Pipeline(
        router, time_scale=0.01, breakers={"smtp": smtp}, rate_limits={"smtp": bucket}
    )
    assert isinstance(await pipeline.process(delivery(1)), Retry)  # an ordinary failed try
    assert bucket.rate == 2000 * SLOW_DOWN
    # The provider answered: it is there, the shop was too fast. No step to the breaker,
    # however many, down to the floor.
    while bucket.rate > bucket.floor:
        refusals = 1
        assert isinstance(await pipeline.process(delivery(1)), Retry)
    assert smtp.state is BreakerState.CLOSED
    assert bucket.rate == 2000 * SLOWEST
    for n in range(150):
        assert await pipeline.process(delivery(n)) == Ack()
    assert bucket.rate == 2000, "each call taken climbs back a step, up to the limit"


async def test_too_fast_with_no_slower_rate_to_go_to_counts_as_the_provider_away() -> None:
    async def send(event: OrderCreated, ctx: MessageContext) -> None:
        raise ProviderUnavailable("smtp", "451 4.7.0 slow down", too_fast=True)

    router = Router("notification-service")
    router.subscriber(OrderCreated, transactional=False, provider="smtp")(send)
    smtp = breaker()
    pipeline = Pipeline(router, time_scale=0.01, breakers={"smtp": smtp})  # no limit set
    for _ in range(SETTINGS.threshold - 1):
        assert isinstance(await pipeline.process(delivery(1)), Retry)
    waiting = asyncio.create_task(pipeline.process(delivery(1)))
    await asyncio.sleep(0.05)
    assert smtp.state is BreakerState.OPEN
    waiting.cancel()
    await asyncio.wait([waiting])


async def test_a_call_to_the_provider_cut_at_the_timeout_counts_as_the_provider_away() -> None:
    async def send(event: OrderCreated, ctx: MessageContext) -> None:
        with calling_provider():
            await asyncio.sleep(10)  # the provider took the connection and says nothing

    router = Router("notification-service")
    router.subscriber(OrderCreated, transactional=False, provider="smtp", timeout=0.02)(send)
    smtp = breaker()
    pipeline = Pipeline(router, time_scale=0.01, breakers={"smtp": smtp})
    for _ in range(SETTINGS.threshold - 1):
        assert isinstance(await pipeline.process(delivery(1)), Retry)
    with capture_logs() as logs:
        waiting = asyncio.create_task(pipeline.process(delivery(1)))
        await asyncio.sleep(0.1)
    assert smtp.state is BreakerState.OPEN
    waiting.cancel()
    await asyncio.wait([waiting])
    # Its line names the failure as every failed try's does: a cut send shows in the log.
    away = [line for line in logs if line["event"].startswith("provider away")]
    assert away
    assert {line["error_type"] for line in away} == {"HandlerTimedOut"}


async def test_a_handler_cut_at_the_timeout_before_calling_says_nothing_of_the_provider() -> None:
    async def send(event: OrderCreated, ctx: MessageContext) -> None:
        await asyncio.sleep(10)  # its database, say: not the provider's doing
        with calling_provider():
            provider_answered()

    router = Router("notification-service")
    router.subscriber(OrderCreated, transactional=False, provider="smtp", timeout=0.02)(send)
    smtp = breaker()
    pipeline = Pipeline(router, time_scale=0.01, breakers={"smtp": smtp})
    for _ in range(SETTINGS.threshold + 1):
        assert isinstance(await pipeline.process(delivery(1)), Retry)
    assert smtp.state is BreakerState.CLOSED


def test_the_rate_limit_now_is_in_the_metrics() -> None:
    metrics = Metrics()
    bucket = TokenBucket(40, on_change=functools.partial(metrics.rate_limit_changed, "smtp"))

    def gauge() -> float | None:
        labels = {"provider": "smtp"}
        return metrics.registry.get_sample_value("messaging_rate_limit_per_second", labels)

    assert gauge() == 40
    bucket.slow_down()
    assert gauge() == 40 * SLOW_DOWN
    bucket.speed_up()
    assert gauge() == bucket.rate > 40 * SLOW_DOWN


async def test_a_retry_after_holds_the_message_though_the_provider_has_a_rate_limit() -> None:
    # A 429 is "too fast" and says when to come back: the limit slows down, and the
    # breaker still holds the message for that long, its only attempt unspent.
    loop = asyncio.get_running_loop()
    calls: list[float] = []

    async def ask(event: OrderCreated, ctx: MessageContext) -> None:
        calls.append(loop.time())
        if len(calls) == 1:
            provider_answered()
            raise ProviderUnavailable("gateway", "429", retry_after=0.3, too_fast=True)
        provider_answered()

    router = Router("payment-service")
    router.subscriber(OrderCreated, transactional=False, max_attempts=1, provider="gateway")(ask)
    gateway = CircuitBreaker("gateway", SETTINGS)
    bucket = TokenBucket(rate=1000)
    pipeline = Pipeline(
        router, time_scale=0.01, breakers={"gateway": gateway}, rate_limits={"gateway": bucket}
    )
    assert await asyncio.wait_for(pipeline.process(delivery(1)), 2) == Ack()
    assert calls[1] - calls[0] >= 0.29
    assert bucket.rate < 1000


async def test_a_provider_that_says_come_back_now_again_and_again_is_asked_ever_more_slowly() -> (
    None
):
    # Retry-After: 0 (or a date already past, or a clock behind): no hot loop of calls.
    calls = 0

    async def ask(event: OrderCreated, ctx: MessageContext) -> None:
        nonlocal calls
        calls += 1
        raise ProviderUnavailable("gateway", "503", retry_after=0)

    router = Router("payment-service")
    router.subscriber(OrderCreated, transactional=False, provider="gateway")(ask)
    gateway = CircuitBreaker("gateway", SETTINGS)  # pause 0.1 s, doubling to 0.4 s
    pipeline = Pipeline(router, time_scale=0.01, breakers={"gateway": gateway})
    waiting = asyncio.create_task(pipeline.process(delivery(1)))
    await asyncio.sleep(1.0)
    waiting.cancel()
    await asyncio.wait([waiting])
    assert calls <= 6, f"{calls} calls in a second"  # 0.1 + 0.2 + 0.4 + 0.4 …


async def test_a_call_cut_at_the_timeout_counts_though_an_earlier_call_was_answered() -> None:
    # The status read answered; the refund that followed hung: the provider is away.
    async def refund(event: OrderCreated, ctx: MessageContext) -> None:
        with calling_provider():
            provider_answered()
        with calling_provider():
            await asyncio.sleep(10)

    router = Router("payment-service")
    router.subscriber(OrderCreated, transactional=False, provider="gateway", timeout=0.02)(refund)
    gateway = CircuitBreaker("gateway", SETTINGS)
    pipeline = Pipeline(router, time_scale=0.01, breakers={"gateway": gateway})
    for _ in range(SETTINGS.threshold - 1):
        assert isinstance(await pipeline.process(delivery(1)), Retry)
    waiting = asyncio.create_task(pipeline.process(delivery(1)))
    await asyncio.sleep(0.1)
    assert gateway.state is BreakerState.OPEN
    waiting.cancel()
    await asyncio.wait([waiting])
