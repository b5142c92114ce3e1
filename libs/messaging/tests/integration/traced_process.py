"""One process of a traced checkout, for the test that follows one trace across processes,
each writing its spans with the ``file`` exporter to TRACE_DIR:

    traced_process.py checkout DATABASE_URL BOOTSTRAP NAMESPACE TRACE_DIR ORDER_ID
    traced_process.py relay    DATABASE_URL BOOTSTRAP NAMESPACE TRACE_DIR
    traced_process.py consumer DATABASE_URL BOOTSTRAP NAMESPACE TRACE_DIR GROUP

``checkout`` is the API's part: a SERVER span in which an OrderCreated is added to the
outbox, then it exits (printing ``trace <id>``). ``relay`` publishes the outbox to Kafka.
``consumer`` runs a worker whose subscriber (of group GROUP) handles OrderCreated inside a
CLIENT span, as the e-mail is sent, and prints ``handled <order id>``. SIGTERM stops the
relay and the consumers gracefully; their spans are written as they exit.
"""

from __future__ import annotations

import asyncio
import signal
import sys
import uuid
from pathlib import Path

from opentelemetry import trace
from opentelemetry.trace import SpanKind
from sqlalchemy.ext.asyncio import async_sessionmaker, create_async_engine

from shop.contracts import OrderCreated, examples
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
from shop.messaging.logging import configure_logging
from shop.messaging.testing import on_kafka
from shop.messaging.tracing import ProcessKind, TracingSettings, configure_tracing
from shop.messaging.transports.kafka import KafkaTransport


def traced(trace_dir: str, service: str, kind: ProcessKind) -> None:
    configure_logging(level="WARNING")
    settings = TracingSettings(exporter="file", file_dir=Path(trace_dir))
    configure_tracing(settings, service_name=service, process_kind=kind)


async def checkout(database_url: str, order_id: str) -> None:
    engine = create_async_engine(database_url.replace("postgresql://", "postgresql+asyncpg://"))
    tracer = trace.get_tracer("checkout")
    event = examples.examples()[OrderCreated].model_copy(update={"order_id": uuid.UUID(order_id)})
    try:
        with tracer.start_as_current_span("POST /v1/orders", kind=SpanKind.SERVER) as request:
            async with async_sessionmaker(engine)() as session, session.begin():
                await add(session, event, key=order_id)
    finally:
        await engine.dispose()
    print(f"trace {request.get_span_context().trace_id:032x}", flush=True)


async def relay(database_url: str, settings: MessagingSettings) -> None:
    transport = KafkaTransport(settings.kafka, Naming(settings.namespace))
    await transport.start()
    relay = Relay(database_url, transport, settings=RelaySettings(poll_interval=0.2))
    loop = asyncio.get_running_loop()
    for stop in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(stop, relay.stop)
    print("relaying", flush=True)
    try:
        await relay.run()
    finally:
        await transport.close()


async def consumer(settings: MessagingSettings, group: str) -> None:
    router = Router(group)
    tracer = trace.get_tracer("consumer")

    @router.subscriber(OrderCreated, transactional=False)
    async def send_email(event: OrderCreated, ctx: MessageContext) -> None:
        with tracer.start_as_current_span("send email", kind=SpanKind.CLIENT):
            await asyncio.sleep(0.01)
        print(f"handled {event.order_id}", flush=True)

    worker = Worker(
        settings, KafkaTransport(settings.kafka, Naming(settings.namespace)), routers=[router]
    )
    run = asyncio.create_task(worker.run())
    await worker.started.wait()
    print("consuming", flush=True)
    await run


def main(
    role: str, database_url: str, bootstrap: str, namespace: str, trace_dir: str, *rest: str
) -> None:
    settings = on_kafka(MessagingSettings(namespace=namespace, drain_timeout=5), bootstrap)
    if role == "checkout":
        traced(trace_dir, "order-service", "api")
        asyncio.run(checkout(database_url, rest[0]))
    elif role == "relay":
        traced(trace_dir, "order-service", "relay")
        asyncio.run(relay(database_url, settings))
    else:
        traced(trace_dir, rest[0], "worker")
        asyncio.run(consumer(settings, rest[0]))


if __name__ == "__main__":
    main(*sys.argv[1:])
