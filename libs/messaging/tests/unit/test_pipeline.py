"""The pipeline's decisions, without a broker or a database (non-transactional handlers)."""

from __future__ import annotations

import asyncio

import pytest

from shop.contracts import OrderCreated, OrderPaid, encode, examples, wrap
from shop.messaging import MessageContext, PermanentError, Router
from shop.messaging.context import current_envelope
from shop.messaging.message import Delivery
from shop.messaging.middlewares import Handling, Next
from shop.messaging.outcome import Ack, DeadLetter, Outcome, Retry
from shop.messaging.pipeline import OutcomeRecord, Pipeline

ORDER_CREATED = wrap(
    examples.examples()[OrderCreated],
    key="order-1",
    traceparent="00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
)


def delivery(body: bytes = encode(ORDER_CREATED), attempt: int = 1) -> Delivery:
    return Delivery(body=body, headers={}, source="shop-order-created", attempt=attempt)


def pipeline_with(
    handler: object, *, max_attempts: int = 3
) -> tuple[Pipeline, list[OutcomeRecord]]:
    router = Router("notification-service")
    router.subscriber(OrderCreated, transactional=False, max_attempts=max_attempts)(handler)  # type: ignore[arg-type]
    records: list[OutcomeRecord] = []
    return Pipeline(router, time_scale=0.5, observers=[records.append]), records


async def succeed(event: OrderCreated, ctx: MessageContext) -> None:
    assert current_envelope() == ctx.envelope


async def fail(event: OrderCreated, ctx: MessageContext) -> None:
    raise TimeoutError("smtp timed out")


async def refuse(event: OrderCreated, ctx: MessageContext) -> None:
    raise PermanentError("bad address")


async def test_success_is_acknowledged_and_observed() -> None:
    pipeline, records = pipeline_with(succeed)
    assert await pipeline.process(delivery()) == Ack()
    [record] = records
    assert (record.subscriber, record.message_type, record.outcome) == (
        "succeed", "order.created", Ack(),
    )  # fmt: skip


async def test_unexpected_errors_are_retried_until_the_last_attempt() -> None:
    pipeline, _ = pipeline_with(fail, max_attempts=3)
    first = await pipeline.process(delivery(attempt=1))
    second = await pipeline.process(delivery(attempt=2))
    last = await pipeline.process(delivery(attempt=3))
    assert isinstance(first, Retry)
    assert isinstance(second, Retry)
    assert 0.8 <= first.delay <= 1.2  # 2 s nominal, time scale 0.5, jitter ±20%
    assert first.delay < second.delay
    assert isinstance(last, DeadLetter)
    assert (last.attempts, last.failure.error_type) == (3, "TimeoutError")


async def test_permanent_errors_are_dead_lettered_at_once() -> None:
    pipeline, _ = pipeline_with(refuse)
    outcome = await pipeline.process(delivery())
    assert isinstance(outcome, DeadLetter)
    assert (outcome.attempts, outcome.failure.error_message) == (1, "bad address")


@pytest.mark.parametrize(
    ("body", "error_type"),
    [
        (b"\xff\xfe not json", "UndecodableMessage"),
        (b"x" * 300_000, "UndecodableMessage"),
        (encode(ORDER_CREATED).replace(b'"total":250000', b'"total":"250000"'), "InvalidMessage"),
        (encode(ORDER_CREATED).replace(b'"order.created"', b'"order.lost"'), "UnknownMessageType"),
        (encode(wrap(examples.examples()[OrderPaid], key="o")), "NoSubscriber"),
    ],
)
async def test_bad_messages_become_dead_letters_with_the_reason(
    body: bytes, error_type: str
) -> None:
    pipeline, _ = pipeline_with(succeed)
    outcome = await pipeline.process(delivery(body))
    assert isinstance(outcome, DeadLetter)
    assert outcome.failure.error_type == error_type
    assert outcome.failure.error_message


async def test_shutdown_cancellation_escapes_so_the_message_is_not_acknowledged() -> None:
    started = asyncio.Event()

    async def slow(event: OrderCreated, ctx: MessageContext) -> None:
        started.set()
        await asyncio.sleep(3600)

    pipeline, records = pipeline_with(slow)
    task = asyncio.create_task(pipeline.process(delivery()))
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert records == []


def test_transactional_subscribers_need_a_session_factory() -> None:
    router = Router("order-service")
    router.subscriber(OrderCreated)(succeed)
    with pytest.raises(ValueError, match="session factory"):
        Pipeline(router)


async def test_a_handler_that_hangs_is_given_up_at_its_timeout_and_retried() -> None:
    release = asyncio.Event()

    async def hang(event: OrderCreated, ctx: MessageContext) -> None:
        await release.wait()  # a provider that never answers, a lock never let go

    router = Router("notification-service")
    router.subscriber(OrderCreated, transactional=False, timeout=0.2)(hang)
    records: list[OutcomeRecord] = []
    pipeline = Pipeline(router, observers=[records.append])

    outcome = await asyncio.wait_for(pipeline.process(delivery()), 5)

    assert isinstance(outcome, Retry)
    [record] = records
    assert "took longer than 0.2 s" in record.outcome.failure.error_message  # type: ignore[union-attr]


async def test_a_handler_without_a_timeout_of_its_own_has_the_pipelines() -> None:
    async def hang(event: OrderCreated, ctx: MessageContext) -> None:
        await asyncio.Event().wait()

    router = Router("notification-service")
    router.subscriber(OrderCreated, transactional=False)(hang)
    pipeline = Pipeline(router, handler_timeout=0.2)

    assert isinstance(await asyncio.wait_for(pipeline.process(delivery()), 5), Retry)


async def test_a_timeout_raised_inside_a_handler_is_its_own_failure_not_the_pipelines() -> None:
    async def times_out(event: OrderCreated, ctx: MessageContext) -> None:
        raise TimeoutError("the database did not answer")

    pipeline, records = pipeline_with(times_out)

    assert isinstance(await pipeline.process(delivery()), Retry)
    assert "the database did not answer" in records[0].outcome.failure.error_message  # type: ignore[union-attr]


def away(error: BaseException) -> bool:
    return isinstance(error, ConnectionRefusedError)


async def test_a_message_that_meets_the_database_away_waits_in_place_and_keeps_its_attempts() -> (
    None
):
    calls: list[int] = []

    async def back_after_three_refusals(event: OrderCreated, ctx: MessageContext) -> None:
        calls.append(ctx.attempt)
        if len(calls) <= 3:
            raise ConnectionRefusedError(111, "Connect call failed")
        raise ValueError("its own failure, once the database is back")

    router = Router("notification-service")
    router.subscriber(OrderCreated, transactional=False, max_attempts=3)(back_after_three_refusals)
    pipeline = Pipeline(router, time_scale=0.001, outage=away)

    # Its first try meets the outage: it is tried again in place, still its first attempt,
    # and its own failure after the outage is that first attempt's, with two more to come.
    outcome = await pipeline.process(delivery(attempt=1))
    assert calls == [1, 1, 1, 1]
    assert isinstance(outcome, Retry)
    assert outcome.attempt == 1
    assert "its own failure" in outcome.failure.error_message


async def test_an_outage_that_outlasts_its_tries_in_place_spends_one_attempt() -> None:
    calls: list[int] = []

    async def database_down(event: OrderCreated, ctx: MessageContext) -> None:
        calls.append(ctx.attempt)
        raise ConnectionRefusedError(111, "Connect call failed")

    router = Router("notification-service")
    router.subscriber(OrderCreated, transactional=False, max_attempts=3, outage_attempts=4)(
        database_down
    )
    pipeline = Pipeline(router, time_scale=0.001, outage=away)

    assert isinstance(await pipeline.process(delivery(attempt=1)), Retry)
    assert len(calls) == 4, "tried in place until the outage's tries were spent"
    assert isinstance(await pipeline.process(delivery(attempt=3)), DeadLetter)
    assert router.max_attempts == 3, "an SQS queue counts the message's own attempts"


async def test_any_other_failure_spends_an_attempt_at_once() -> None:
    calls: list[int] = []

    async def broken(event: OrderCreated, ctx: MessageContext) -> None:
        calls.append(ctx.attempt)
        raise ValueError("a defect")

    router = Router("notification-service")
    router.subscriber(OrderCreated, transactional=False, max_attempts=3)(broken)
    pipeline = Pipeline(router, outage=away)

    assert isinstance(await pipeline.process(delivery(attempt=3)), DeadLetter)
    assert calls == [3]


async def test_a_concern_of_the_services_own_is_a_middleware_around_the_handler() -> None:
    """It runs inside the standard ones: it sees the routed subscriber, its failure is
    retried like the handler's, and it can answer without the handler."""
    seen: list[str | None] = []

    async def paused_for_maintenance(handling: Handling, call_next: Next) -> Outcome:
        seen.append(handling.subscriber_id)
        if handling.delivery.attempt == 1:
            raise ConnectionError("provider paused")
        return await call_next(handling)

    router = Router("notification-service")
    router.subscriber(OrderCreated, transactional=False)(succeed)
    records: list[OutcomeRecord] = []
    pipeline = Pipeline(router, observers=[records.append], middlewares=[paused_for_maintenance])

    first = await pipeline.process(delivery(attempt=1))
    second = await pipeline.process(delivery(attempt=2))

    assert isinstance(first, Retry)
    assert first.failure.error_type == "ConnectionError"
    assert second == Ack()
    assert seen == ["notification-service:succeed"] * 2
    assert [r.outcome for r in records] == [first, second]


async def test_an_undecodable_body_reaches_no_middleware_of_the_services() -> None:
    reached: list[Handling] = []

    async def record(handling: Handling, call_next: Next) -> Outcome:
        reached.append(handling)
        return await call_next(handling)

    router = Router("notification-service")
    router.subscriber(OrderCreated, transactional=False)(succeed)
    pipeline = Pipeline(router, middlewares=[record])
    outcome = await pipeline.process(delivery(body=b"{not json"))
    assert isinstance(outcome, DeadLetter)
    assert reached == []
