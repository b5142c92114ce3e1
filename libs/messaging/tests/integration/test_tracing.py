"""One trace per checkout, across the outbox, the relay and the consumers: in one process on
the memory transport (spans kept in memory), and across four processes on Kafka, each
writing its spans with the ``file`` exporter, read back with shop.devstack's ``read_spans``."""

from __future__ import annotations

import signal
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from opentelemetry import trace
from opentelemetry.trace import SpanKind
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from shop.contracts import OrderCreated, OrderPaid, decode, examples
from shop.devstack.kafka import KafkaCluster
from shop.devstack.spans import read_spans
from shop.devstack.testing import wait_for_line
from shop.messaging import (
    MessageContext,
    MessagingSettings,
    Naming,
    Relay,
    RelaySettings,
    Router,
    Worker,
    add,
)
from shop.messaging.schema import outbox
from shop.messaging.testing import on_kafka, recording_spans, running, wait_until
from shop.messaging.transports.kafka import KafkaTransport
from shop.messaging.transports.memory import MemoryBroker, MemoryTransport

SCRIPT = Path(__file__).with_name("traced_process.py")
tracer = trace.get_tracer("tests")


async def test_request_relay_handler_and_what_it_publishes_share_one_trace(
    sessions: async_sessionmaker[AsyncSession], database_url: str, unique_name: str
) -> None:
    spans = recording_spans()
    router = Router(unique_name)

    @router.subscriber(OrderCreated)
    async def mark_paid(event: OrderCreated, ctx: MessageContext) -> None:
        paid = examples.examples()[OrderPaid].model_copy(update={"order_id": event.order_id})
        await add(ctx.db, paid, key=str(event.order_id))

    transport = MemoryTransport(MemoryBroker())
    relay = Relay(database_url, transport, settings=RelaySettings(poll_interval=0.1))
    worker = Worker(
        MessagingSettings(), transport, routers=[router], sessions=sessions, relay=relay
    )
    async with running(worker):
        with tracer.start_as_current_span("POST /v1/orders", kind=SpanKind.SERVER) as request:
            async with sessions() as session, session.begin():
                await add(session, examples.examples()[OrderCreated], key="order-1")
        # The relay also sends the OrderPaid the handler added: two PRODUCER spans.
        await wait_until(
            lambda: sum(s.kind == SpanKind.PRODUCER for s in spans.get_finished_spans()) == 2
        )

    finished = {s.name: s for s in spans.get_finished_spans()}
    server = request.get_span_context()
    send, consumer = finished["send order.created"], finished["process order.created"]
    # request → send → process: the relay's span is the request's child, the handler's
    # the relay's, and nothing else: one traceparent a message, no links.
    assert send.kind == SpanKind.PRODUCER
    assert send.parent is not None
    assert (send.parent.trace_id, send.parent.span_id) == (server.trace_id, server.span_id)
    assert consumer.kind == SpanKind.CONSUMER
    assert consumer.context is not None
    assert send.context is not None
    assert consumer.parent is not None
    assert consumer.parent.span_id == send.context.span_id
    assert not consumer.links
    # The handler's OrderPaid continues the trace from the handler's span, in its row's
    # traceparent header (its envelope carries none).
    async with sessions() as session:
        rows = (await session.execute(select(outbox).order_by(outbox.c.id))).all()
    paid = rows[1]
    assert decode(paid.body).traceparent is None
    assert paid.headers["traceparent"].split("-")[1:3] == [
        f"{consumer.context.trace_id:032x}",
        f"{consumer.context.span_id:016x}",
    ]
    send_paid = finished["send order.paid"].parent
    assert send_paid is not None
    assert send_paid.span_id == consumer.context.span_id


async def test_the_kafka_broker_runs_no_faststream_middleware(
    kafka_cluster: KafkaCluster, unique_name: str
) -> None:
    """FastStream's OpenTelemetry middleware would start consuming spans of its own, beside
    the pipeline's, which continue the traceparent header."""
    settings = on_kafka(MessagingSettings(namespace=unique_name), kafka_cluster.bootstrap_servers)
    transport = KafkaTransport(settings.kafka, Naming(unique_name))
    await transport.start()
    try:
        assert list(transport.broker.middlewares) == []
    finally:
        await transport.close()


def start(role: str, *arguments: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, str(SCRIPT), role, *arguments], stdout=subprocess.PIPE, text=True
    )


def stop(process: subprocess.Popen[str]) -> None:
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
    try:
        process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


@pytest.mark.usefixtures("sessions")  # the outbox table, in the database of database_url
def test_one_orders_trace_holds_spans_of_four_processes_with_one_trace_id(
    database_url: str, kafka_cluster: KafkaCluster, unique_name: str, tmp_path: Path
) -> None:
    order_id = str(uuid.uuid4())
    common = (database_url, kafka_cluster.bootstrap_servers, unique_name, str(tmp_path))
    consumers = {
        group: start("consumer", *common, group)
        for group in ("notification-service", "payment-service")
    }
    relay = start("relay", *common)
    processes = [*consumers.values(), relay]
    try:
        for process in consumers.values():
            wait_for_line(process, "consuming", within=90)
        wait_for_line(relay, "relaying", within=90)
        checkout = subprocess.run(
            [sys.executable, str(SCRIPT), "checkout", *common, order_id],
            capture_output=True,
            text=True,
            timeout=120,
            check=True,
        )
        trace_id = checkout.stdout.split()[-1]
        for process in consumers.values():
            wait_for_line(process, f"handled {order_id}", within=90)
    finally:
        for process in processes:
            stop(process)
    assert [process.returncode for process in processes] == [0, 0, 0]

    spans = read_spans(tmp_path, key=order_id)
    assert {span.trace_id for span in spans} == {trace_id}
    assert spans == read_spans(tmp_path)  # nothing else was traced
    assert len({span.pid for span in spans}) == 4
    by_kind = {(s.service, s.process_kind, s.kind): s for s in spans}
    assert sorted(by_kind) == [
        ("notification-service", "worker", "CLIENT"),
        ("notification-service", "worker", "CONSUMER"),
        ("order-service", "api", "SERVER"),
        ("order-service", "relay", "PRODUCER"),
        ("payment-service", "worker", "CLIENT"),
        ("payment-service", "worker", "CONSUMER"),
    ]
    request = by_kind["order-service", "api", "SERVER"]
    send = by_kind["order-service", "relay", "PRODUCER"]
    assert request.parent_span_id is None
    assert send.parent_span_id == request.span_id
    for service in ("notification-service", "payment-service"):
        assert by_kind[service, "worker", "CONSUMER"].parent_span_id == send.span_id, service
    for service in ("notification-service", "payment-service"):
        consumer = by_kind[service, "worker", "CONSUMER"]
        assert consumer.attributes["messaging.consumer.group.name"] == service
        assert consumer.attributes["messaging.system"] == "kafka"
        assert by_kind[service, "worker", "CLIENT"].parent_span_id == consumer.span_id
