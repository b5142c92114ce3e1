"""What only the SQS/SNS transport does, against moto's server: the queues, policies and
subscriptions it declares, retries by visibility timeout, SQS's own redrive of messages
that crash their worker, dead letters kept in a queue (cut to fit when too large), and a
consumer that stops when it cannot write an outcome."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from typing import Any

import pytest
from aiobotocore.session import AioSession
from botocore.exceptions import ClientError

from shop.contracts import (
    ALL_CONTRACTS,
    Envelope,
    OrderCreated,
    OrderPaid,
    PaymentReceived,
    encode,
    wrap,
)
from shop.contracts.examples import examples
from shop.devstack.aws import AwsEndpoint
from shop.messaging import headers as h
from shop.messaging.deadletters import StoredDeadLetter, dead_letter_headers
from shop.messaging.errors import (
    MessagingError,
    PermanentError,
    PublishError,
)
from shop.messaging.message import Delivery, OutgoingMessage
from shop.messaging.naming import Naming
from shop.messaging.outbox import message_headers
from shop.messaging.outcome import Ack, DeadLetter, Failure
from shop.messaging.pipeline import OutcomeRecord, Pipeline
from shop.messaging.settings import SqsSettings
from shop.messaging.subscriber import Router
from shop.messaging.testing import CollectedDeadLetters, eventually, outgoing, publish, wait_until
from shop.messaging.transports.base import ConsumerOptions
from shop.messaging.transports.sqs import (
    HEADERS_ATTRIBUTE,
    KEY_ATTRIBUTE,
    MOVED_BY_SQS,
    SqsTransport,
    message_attributes,
)

WAIT = 30.0
GROUP = "billing"


def sqs_settings(endpoint: AwsEndpoint, **overrides: Any) -> SqsSettings:
    fast = {"wait_time_seconds": 1, "visibility_timeout": 2, "receive_concurrency": 1}
    return SqsSettings(
        endpoint_url=endpoint.url,
        region=endpoint.region,
        access_key_id=endpoint.access_key_id,
        secret_access_key=endpoint.secret_access_key,
        **{**fast, **overrides},
    )


@asynccontextmanager
async def started(transport: SqsTransport) -> AsyncIterator[SqsTransport]:
    await transport.start()
    try:
        yield transport
    finally:
        await transport.close()


async def topics_named(sns: Any, prefix: str) -> list[str]:
    """ARNs of the SNS topics whose names start with ``prefix``."""
    arns: list[str] = []
    async for page in sns.get_paginator("list_topics").paginate():
        arns += [t["TopicArn"] for t in page.get("Topics", [])]
    return [arn for arn in arns if arn.rsplit(":", 1)[-1].startswith(prefix)]


@pytest.fixture
async def aws(aws_endpoint: AwsEndpoint, unique_name: str) -> AsyncIterator[tuple[Any, Any]]:
    """Plain SNS and SQS clients, to look at what the transport made; at the end, the
    test's topics and queues are deleted."""
    session = AioSession()
    kwargs = aws_endpoint.client_kwargs()
    async with (
        session.create_client("sns", **kwargs) as sns,
        session.create_client("sqs", **kwargs) as sqs,
    ):
        yield sns, sqs
        for url in (await sqs.list_queues(QueueNamePrefix=unique_name)).get("QueueUrls", []):
            await sqs.delete_queue(QueueUrl=url)
        for topic_arn in await topics_named(sns, unique_name):
            await sns.delete_topic(TopicArn=topic_arn)


@pytest.fixture
async def transport(
    aws_endpoint: AwsEndpoint, unique_name: str, aws: tuple[Any, Any]
) -> AsyncIterator[SqsTransport]:
    async with started(SqsTransport(sqs_settings(aws_endpoint), Naming(unique_name))) as t:
        yield t


def envelope_of(contract: type[Any], key: str) -> Envelope[Any]:
    return wrap(examples()[contract], key=key)


class Recorder:
    """A pipeline of one OrderCreated subscriber whose behaviour a test sets."""

    def __init__(self, group: str, *, max_attempts: int = 5, base_delay: float = 2.0) -> None:
        self.calls: list[tuple[str, int, float]] = []
        self.outcomes: list[OutcomeRecord] = []
        self.behaviour: Callable[[str, int], Any] = lambda key, attempt: None
        router = Router(group)

        @router.subscriber(
            OrderCreated,
            transactional=False,
            max_attempts=max_attempts,
            base_delay=base_delay,
        )
        async def handle(event: OrderCreated, ctx: Any) -> None:
            self.calls.append((ctx.envelope.key, ctx.attempt, time.monotonic()))
            result = self.behaviour(ctx.envelope.key, ctx.attempt)
            if asyncio.iscoroutine(result):
                await result

        self.pipeline = Pipeline(router, observers=[self.outcomes.append])

    def of(self, kind: type) -> list[OutcomeRecord]:
        return [r for r in self.outcomes if isinstance(r.outcome, kind)]


@asynccontextmanager
async def consuming(transport: SqsTransport, pipeline: Pipeline) -> AsyncIterator[None]:
    consumer = transport.consumer(pipeline, ConsumerOptions(max_in_flight=8, drain_timeout=5))
    task = asyncio.create_task(consumer.run())
    try:
        await wait_until(lambda: consumer.ready or task.done(), within=WAIT, what="consumer")
        yield
    finally:
        consumer.stop()
        await asyncio.wait_for(task, WAIT)


async def queue_attributes(sqs: Any, url: str) -> dict[str, str]:
    response = await sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["All"])
    return dict(response["Attributes"])


async def messages_in(sqs: Any, url: str) -> int:
    attributes = await queue_attributes(sqs, url)
    return int(attributes["ApproximateNumberOfMessages"]) + int(
        attributes["ApproximateNumberOfMessagesNotVisible"]
    )


async def receive_all(sqs: Any, url: str, expected: int) -> list[dict[str, Any]]:
    """Receive ``expected`` messages (deleting them), then make sure no other comes."""
    received: list[dict[str, Any]] = []
    deadline = time.monotonic() + WAIT
    while len(received) < expected and time.monotonic() < deadline:
        response = await sqs.receive_message(
            QueueUrl=url, MaxNumberOfMessages=10, WaitTimeSeconds=1, MessageAttributeNames=["All"]
        )
        for message in response.get("Messages", []):
            received.append(message)
            await sqs.delete_message(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"])
    extra = await sqs.receive_message(QueueUrl=url, WaitTimeSeconds=1)
    assert extra.get("Messages", []) == []
    return received


def headers_of(message: dict[str, Any]) -> dict[str, str]:
    return dict(json.loads(message["MessageAttributes"][HEADERS_ATTRIBUTE]["StringValue"]))


async def _ignore(event: Any, ctx: Any) -> None:
    return None


async def test_declaring_twice_changes_nothing_and_wires_the_queue(
    transport: SqsTransport, aws: tuple[Any, Any], aws_endpoint: AwsEndpoint, unique_name: str
) -> None:
    sns, sqs = aws
    naming = Naming(unique_name)
    router = Router(GROUP)
    router.subscriber(OrderCreated, transactional=False, max_attempts=3)(_ignore)
    router.subscriber(OrderPaid, transactional=False, max_attempts=4)(_ignore)
    pipeline = Pipeline(router)

    await transport.declare(pipeline)
    await transport.declare(pipeline)
    again = SqsTransport(sqs_settings(aws_endpoint), naming)
    async with started(again):
        await again.declare(pipeline)

    queues = await transport.queues_of(GROUP)
    attributes = await queue_attributes(sqs, queues.url)
    assert json.loads(attributes["RedrivePolicy"]) == {
        "deadLetterTargetArn": queues.dead_letters_arn,
        "maxReceiveCount": 4,  # the most attempts any subscriber allows
    }
    assert attributes["VisibilityTimeout"] == "2"
    [statement] = json.loads(attributes["Policy"])["Statement"]
    topic_arns = sorted(
        [await transport.topic_arn(naming.topic(c)) for c in (OrderCreated, OrderPaid)]
    )
    assert statement["Condition"]["ArnEquals"]["aws:SourceArn"] == topic_arns

    mine = sorted(arn.rsplit(":", 1)[-1] for arn in await topics_named(sns, unique_name))
    assert mine == sorted(naming.topic(contract) for contract in ALL_CONTRACTS)
    dead_letter_attributes = await queue_attributes(sqs, queues.dead_letters_url)
    # Letters wait there for the worker to collect them: the transport's explicit
    # retention (7 days unless configured), not SQS's default of 4.
    assert dead_letter_attributes["MessageRetentionPeriod"] == str(7 * 24 * 3600)
    for topic_arn in topic_arns:
        [subscription] = (await sns.list_subscriptions_by_topic(TopicArn=topic_arn))[
            "Subscriptions"
        ]
        assert subscription["Endpoint"] == queues.arn
        details = await sns.get_subscription_attributes(
            SubscriptionArn=subscription["SubscriptionArn"]
        )
        assert details["Attributes"]["RawMessageDelivery"] == "true"


async def test_without_auto_create_missing_topics_queues_and_messages_are_named(
    transport: SqsTransport, aws: tuple[Any, Any], aws_endpoint: AwsEndpoint, unique_name: str
) -> None:
    _, sqs = aws
    naming = Naming(unique_name)
    strict = SqsTransport(sqs_settings(aws_endpoint, auto_create=False), Naming(f"{unique_name}x"))
    with pytest.raises(MessagingError, match="SNS topics missing"):
        await strict.start()

    recorder = Recorder(GROUP)
    await transport.declare(recorder.pipeline)
    async with started(SqsTransport(sqs_settings(aws_endpoint, auto_create=False), naming)) as t:
        with pytest.raises(MessagingError, match="does not exist"):
            await t.declare(Recorder("other").pipeline)
        unknown = OutgoingMessage(topic=f"{unique_name}-nowhere", key="b", body=b"{}")
        batch = [
            outgoing(envelope_of(OrderCreated, "a"), naming=naming),
            unknown,
            outgoing(envelope_of(OrderCreated, "b"), naming=naming),  # held back behind its key
            outgoing(envelope_of(OrderCreated, "c"), naming=naming),
        ]
        with pytest.raises(PublishError) as raised:
            await t.publish(batch)
    assert raised.value.failed == {1, 2}
    received = await receive_all(sqs, (await transport.queues_of(GROUP)).url, 2)
    assert sorted(m["MessageAttributes"][KEY_ATTRIBUTE]["StringValue"] for m in received) == [
        "a",
        "c",
    ]


async def test_each_queue_gets_only_the_types_it_subscribes_to(
    transport: SqsTransport, aws: tuple[Any, Any], unique_name: str
) -> None:
    _, sqs = aws
    naming = Naming(unique_name)
    orders, payments = Router("orders"), Router("payments")
    orders.subscriber(OrderCreated, transactional=False)(_ignore)
    payments.subscriber(PaymentReceived, transactional=False)(_ignore)
    for router in (orders, payments):
        await transport.declare(Pipeline(router))
    created = envelope_of(OrderCreated, "order-1")
    paid = envelope_of(PaymentReceived, "order-1")

    await publish(transport, created, paid, naming=naming)

    [order_message] = await receive_all(sqs, (await transport.queues_of("orders")).url, 1)
    [payment_message] = await receive_all(sqs, (await transport.queues_of("payments")).url, 1)
    assert order_message["Body"].encode() == encode(created)
    assert payment_message["Body"].encode() == encode(paid)
    assert headers_of(order_message) == message_headers(created)
    attributes = order_message["MessageAttributes"]
    assert attributes[KEY_ATTRIBUTE]["StringValue"] == "order-1"
    assert attributes[h.MESSAGE_TYPE]["StringValue"] == "order.created"


async def test_a_batch_of_interleaved_topics_goes_out_in_full_batches_each_key_in_order(
    transport: SqsTransport, aws: tuple[Any, Any], unique_name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What a relay hands over: each order's events one after the other, so the topic
    changes at every message. SNS takes ten messages of one topic a call, and only a key's
    own messages need to keep their order: 40 messages go in 4 calls, not 40."""
    _, sqs = aws
    naming = Naming(unique_name)
    router = Router("everything")
    router.subscriber(OrderCreated, transactional=False)(_ignore)
    router.subscriber(OrderPaid, transactional=False)(_ignore)
    await transport.declare(Pipeline(router))
    calls: list[int] = []
    publish_batch = transport._client.publish_batch

    async def counted(topic_arn: str, entries: Any) -> dict[int, str]:
        calls.append(len(entries))
        return await publish_batch(topic_arn, entries)

    monkeypatch.setattr(transport._client, "publish_batch", counted)
    orders = [f"order-{n}" for n in range(20)]
    events = [envelope_of(kind, key) for key in orders for kind in (OrderCreated, OrderPaid)]

    await publish(transport, *events, naming=naming)

    assert calls == [10, 10, 10, 10]
    received = await receive_all(sqs, (await transport.queues_of("everything")).url, 40)
    seen = [
        (m["MessageAttributes"][KEY_ATTRIBUTE]["StringValue"], headers_of(m)[h.MESSAGE_TYPE])
        for m in received
    ]
    for key in orders:
        assert [kind for k, kind in seen if k == key] == ["order.created", "order.paid"]


async def test_a_retried_message_comes_back_after_its_delay_one_attempt_later(
    transport: SqsTransport, aws: tuple[Any, Any]
) -> None:
    _, sqs = aws
    recorder = Recorder(GROUP, base_delay=1.0)  # delays ~1 s, then ~2 s

    def fail_twice(key: str, attempt: int) -> None:
        if attempt < 3:
            raise ConnectionError("payment provider timed out")

    recorder.behaviour = fail_twice
    await transport.declare(recorder.pipeline)
    async with consuming(transport, recorder.pipeline):
        await publish(transport, envelope_of(OrderCreated, "o-1"))
        await wait_until(lambda: recorder.of(Ack) != [], within=WAIT, what="success")

    assert [attempt for _, attempt, _ in recorder.calls] == [1, 2, 3]
    times = [at for _, _, at in recorder.calls]
    assert times[1] - times[0] >= 0.9
    assert times[2] - times[1] >= 1.9
    assert await messages_in(sqs, (await transport.queues_of(GROUP)).url) == 0


async def test_a_slow_handler_keeps_its_message_hidden(
    aws_endpoint: AwsEndpoint, aws: tuple[Any, Any], unique_name: str
) -> None:
    recorder = Recorder(GROUP)
    recorder.behaviour = lambda key, attempt: asyncio.sleep(3)  # three visibility timeouts
    settings = sqs_settings(aws_endpoint, visibility_timeout=1)
    async with started(SqsTransport(settings, Naming(unique_name))) as transport:
        await transport.declare(recorder.pipeline)
        async with consuming(transport, recorder.pipeline):
            await publish(transport, envelope_of(OrderCreated, "o"))
            await wait_until(lambda: recorder.of(Ack) != [], within=WAIT, what="success")
            await asyncio.sleep(1.5)  # time for a redelivery, had visibility lapsed
        assert [attempt for _, attempt, _ in recorder.calls] == [1]
        assert await messages_in(aws[1], (await transport.queues_of(GROUP)).url) == 0


async def test_a_message_whose_handler_outlasts_the_drain_is_let_go_at_once(
    aws_endpoint: AwsEndpoint, aws: tuple[Any, Any], unique_name: str
) -> None:
    # Cut by the drain timeout, it is unsettled: another worker may take it at once, not
    # only when its visibility timeout (a minute here) runs out.
    recorder = Recorder(GROUP)
    started_handling = asyncio.Event()

    async def hang(key: str, attempt: int) -> None:
        started_handling.set()
        await asyncio.sleep(3600)

    recorder.behaviour = hang
    settings = sqs_settings(aws_endpoint, visibility_timeout=60)
    async with started(SqsTransport(settings, Naming(unique_name))) as transport:
        await transport.declare(recorder.pipeline)
        queues = await transport.queues_of(GROUP)
        consumer = transport.consumer(
            recorder.pipeline, ConsumerOptions(max_in_flight=8, drain_timeout=0.5)
        )
        task = asyncio.create_task(consumer.run())
        await publish(transport, envelope_of(OrderCreated, "o"))
        await asyncio.wait_for(started_handling.wait(), WAIT)
        consumer.stop()
        await asyncio.wait_for(task, WAIT)

        response = await aws[1].receive_message(QueueUrl=queues.url, WaitTimeSeconds=2)
        assert len(response.get("Messages", [])) == 1, "still hidden after its worker let go"


async def test_a_message_that_is_never_settled_is_moved_by_sqs(
    transport: SqsTransport, aws: tuple[Any, Any]
) -> None:
    _, sqs = aws
    recorder = Recorder(GROUP, max_attempts=2)
    await transport.declare(recorder.pipeline)
    queues = await transport.queues_of(GROUP)
    message = outgoing(envelope_of(OrderCreated, "crash"), naming=transport.naming)
    await transport.publish([message])

    receives = 0
    deadline = time.monotonic() + WAIT
    while await messages_in(sqs, queues.dead_letters_url) == 0:
        assert time.monotonic() < deadline, "SQS never moved the message"
        # A worker that crashes: it takes the message and never settles it.
        response = await sqs.receive_message(
            QueueUrl=queues.url, VisibilityTimeout=1, WaitTimeSeconds=1
        )
        receives += len(response.get("Messages", []))

    assert receives == 2  # maxReceiveCount; the third receive moved it
    [letter] = await CollectedDeadLetters(transport, GROUP).list()
    assert await messages_in(sqs, queues.dead_letters_url) == 0, "kept, it left the queue"
    assert letter.error_type == MOVED_BY_SQS
    assert letter.attempts == 2
    assert letter.body == message.body
    assert letter.headers == message.headers
    assert letter.source == queues.name
    assert letter.group == GROUP
    assert letter.message_type == "order.created"


async def test_dead_letters_are_listed_redriven_and_purged(
    transport: SqsTransport, aws: tuple[Any, Any]
) -> None:
    _, sqs = aws
    recorder = Recorder(GROUP)
    broken = {"yes": True}

    def refuse_while_broken(key: str, attempt: int) -> None:
        if broken["yes"]:
            raise PermanentError(f"no template for {key}")

    recorder.behaviour = refuse_while_broken
    await transport.declare(recorder.pipeline)
    queues = await transport.queues_of(GROUP)
    kept = CollectedDeadLetters(transport, GROUP)
    messages = {
        key: outgoing(envelope_of(OrderCreated, key), naming=transport.naming) for key in ("a", "b")
    }
    async with consuming(transport, recorder.pipeline):
        await transport.publish(list(messages.values()))
        await wait_until(lambda: len(recorder.of(DeadLetter)) == 2, within=WAIT, what="DLQ")
        letters: dict[str, StoredDeadLetter] = {}

        async def both_kept() -> bool:
            letters.update((x.headers[h.EVENT_ID], x) for x in await kept.list())
            return len(letters) == 2

        await eventually(both_kept, within=WAIT, what="both dead letters kept")

        for message in messages.values():
            letter = letters[message.headers[h.EVENT_ID]]
            assert letter.body == message.body
            assert letter.headers == message.headers
            assert letter.error_type == "PermanentError"
            assert letter.error_message == f"no template for {message.key}"
            assert letter.attempts == 1
            assert letter.source == queues.name
            assert letter.group == GROUP

        broken["yes"] = False
        redriven = letters[messages["a"].headers[h.EVENT_ID]]
        await kept.letters.redrive_one(redriven.id)
        await wait_until(lambda: recorder.of(Ack) != [], within=WAIT, what="the redriven one")
        with pytest.raises(KeyError):
            await kept.letters.redrive_one(redriven.id)
        [left] = await kept.list()
        assert await kept.letters.purge_ids() == [left.id]
        assert await kept.list() == []
        # Gone: a purge that deleted nothing says so.
        assert await kept.letters.purge_ids() == []

    assert recorder.calls[-1][:2] == ("a", 1)  # a redriven message starts again
    assert await messages_in(sqs, queues.dead_letters_url) == 0


async def test_all_dead_letters_are_redriven_in_bulk_to_the_consumers_queue(
    transport: SqsTransport, aws: tuple[Any, Any]
) -> None:
    _, sqs = aws
    await transport.declare(Recorder(GROUP).pipeline)
    queues = await transport.queues_of(GROUP)
    envelopes = [envelope_of(OrderCreated, f"o-{i}") for i in range(3)]
    for envelope in envelopes[:2]:
        delivery = Delivery(encode(envelope), message_headers(envelope), queues.name)
        failed = Failure("ValueError", "template variable missing")
        now = datetime.now(UTC)
        stored = dead_letter_headers(GROUP, delivery, DeadLetter(failed, 5, now, now))
        await sqs.send_message(
            QueueUrl=queues.dead_letters_url,
            MessageBody=encode(envelope).decode(),
            MessageAttributes=message_attributes(stored, envelope.key),
        )
    # …and one as SQS moves a message itself: just as it was published.
    await sqs.send_message(
        QueueUrl=queues.dead_letters_url,
        MessageBody=encode(envelopes[2]).decode(),
        MessageAttributes=message_attributes(message_headers(envelopes[2]), envelopes[2].key),
    )

    kept = CollectedDeadLetters(transport, GROUP)
    assert len(await kept.list()) == 3
    moved = await kept.letters.redrive(per_second=50)

    assert moved == 3
    assert await messages_in(sqs, queues.dead_letters_url) == 0
    received = await receive_all(sqs, queues.url, 3)
    by_key = {m["MessageAttributes"][KEY_ATTRIBUTE]["StringValue"]: m for m in received}
    assert set(by_key) == {e.key for e in envelopes}
    for envelope in envelopes:
        message = by_key[envelope.key]
        assert message["Body"].encode() == encode(envelope)
        assert headers_of(message) == {**message_headers(envelope), h.ORIGIN: queues.name}


async def test_a_dead_letter_too_large_for_its_queue_is_kept_as_a_prefix_with_its_reason(
    transport: SqsTransport, aws: tuple[Any, Any]
) -> None:
    _, sqs = aws
    recorder = Recorder(GROUP)
    recorder.behaviour = lambda key, attempt: (_ for _ in ()).throw(PermanentError("refused"))
    await transport.declare(recorder.pipeline)
    queues = await transport.queues_of(GROUP)
    # The endpoint takes at most 1 MiB a message: a dead-letter queue that takes 1 KiB
    # makes a 4 KiB message too large to keep whole.
    await sqs.set_queue_attributes(
        QueueUrl=queues.dead_letters_url, Attributes={"MaximumMessageSize": "1024"}
    )
    message = outgoing(envelope_of(OrderCreated, "big"), naming=transport.naming)
    body = message.body.decode()
    padded = body[:-1] + ', "padding": "' + "x" * 4096 + '"}'
    await sqs.send_message(
        QueueUrl=queues.url,
        MessageBody=padded,
        MessageAttributes=message_attributes(message.headers, message.key),
    )
    kept = CollectedDeadLetters(transport, GROUP)

    async with consuming(transport, recorder.pipeline):
        await wait_until(lambda: len(recorder.outcomes) == 1, within=WAIT, what="an outcome")

        async def one_letter() -> bool:
            return len(await kept.list()) == 1

        await eventually(one_letter, within=WAIT, what="one dead letter")
    (letter,) = await kept.list()
    assert letter.truncated
    assert letter.whole_body_size == len(padded.encode())
    assert padded.encode().startswith(letter.body)
    assert len(letter.body) <= 1024
    assert (letter.error_type, letter.error_message) == ("PermanentError", "refused")
    assert await messages_in(sqs, queues.url) == 0  # settled: it left the queue


async def test_a_consumer_refused_where_it_keeps_dead_letters_stops_with_the_reason(
    transport: SqsTransport, aws: tuple[Any, Any]
) -> None:
    _, sqs = aws
    recorder = Recorder(GROUP)
    recorder.behaviour = lambda key, attempt: (_ for _ in ()).throw(PermanentError("refused"))
    await transport.declare(recorder.pipeline)
    queues = await transport.queues_of(GROUP)
    consumer = transport.consumer(
        recorder.pipeline, ConsumerOptions(max_in_flight=8, drain_timeout=5, outcome_timeout=1)
    )
    task = asyncio.create_task(consumer.run())
    try:
        await wait_until(lambda: consumer.ready, within=WAIT, what="consumer")
        await sqs.delete_queue(QueueUrl=queues.dead_letters_url)  # nowhere to keep it
        await transport.publish([outgoing(envelope_of(OrderCreated, "x"), naming=transport.naming)])
        # A refusal is not worth another try: the consumer stops at once, and its worker
        # exits non-zero, rather than take message after message it cannot settle.
        with pytest.raises(ClientError, match=r"NonExistentQueue|QueueDoesNotExist"):
            await asyncio.wait_for(task, WAIT)
    finally:
        consumer.stop()
        if not task.done():
            await asyncio.wait_for(task, WAIT)
