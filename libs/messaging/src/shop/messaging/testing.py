"""Helpers for tests of services that use this library (no fakes: real workers, run in the
background of a test, messages put on a real transport as a relay would, and polling for
what they did)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Iterator, Sequence
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from typing import Any

from opentelemetry import context, trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.util._once import Once
from prometheus_client import CollectorRegistry

from shop.contracts import Envelope, encode
from shop.messaging import headers as h
from shop.messaging.deadletter_collector import DeadLetterCollector
from shop.messaging.deadletter_table import MemoryDeadLetterStore
from shop.messaging.deadletters import DeadLetterCourier, DeadLetters, StoredDeadLetter
from shop.messaging.health import HealthServer, OperatorRoute
from shop.messaging.message import OutgoingMessage
from shop.messaging.naming import Naming
from shop.messaging.outbox import message_headers
from shop.messaging.retry import RetryPolicy
from shop.messaging.settings import KafkaSettings, MessagingSettings
from shop.messaging.subscriber import Router
from shop.messaging.tracing import propagation
from shop.messaging.transports import Transport, create_transport
from shop.messaging.worker import Worker

_recorded: InMemorySpanExporter | None = None

UNSCOPED = Naming()
"""Topic names without a namespace: what a transport made with no settings uses."""


@dataclass(frozen=True, slots=True)
class SubscriberOutline:
    """One subscriber as a worker runs it, without its handler."""

    group: str
    contract_id: str
    name: str
    retry: RetryPolicy
    transactional: bool
    max_in_flight: int


def outline(routers: Iterable[Router]) -> list[SubscriberOutline]:
    """What ``routers`` subscribe to, without their handlers, in their order. Compares the
    routers a worker runs with those its service documents."""
    return [
        SubscriberOutline(
            group=router.group,
            contract_id=subscriber.contract.contract_id(),
            name=subscriber.name,
            retry=subscriber.retry,
            transactional=subscriber.transactional,
            max_in_flight=subscriber.max_in_flight,
        )
        for router in routers
        for subscriber in router
    ]


def outgoing(envelope: Envelope[Any], *, naming: Naming = UNSCOPED) -> OutgoingMessage:
    """``envelope`` as the relay sends it: on its type's topic (in ``naming``'s namespace),
    keyed by its aggregate, with the headers consumers route and trace by."""
    return OutgoingMessage(
        topic=naming.topic(envelope.type),
        key=envelope.key,
        body=encode(envelope),
        headers=message_headers(envelope),
    )


@contextmanager
def in_trace(traceparent: str, *, tracestate: str | None = None) -> Iterator[None]:
    """Run the block in the trace ``traceparent`` names, as a process runs a handler of a
    message that came with it (and with ``tracestate``, if given): what the block adds to
    the outbox, or makes :func:`outgoing`, carries that trace on in its headers."""
    incoming = {h.TRACEPARENT: traceparent}
    if tracestate is not None:
        incoming[h.TRACESTATE] = tracestate
    token = context.attach(propagation.extract(incoming))
    try:
        yield
    finally:
        context.detach(token)


async def publish(
    transport: Transport,
    *messages: Envelope[Any] | OutgoingMessage,
    naming: Naming | None = None,
) -> None:
    """Publish ``messages``, in one batch and in order, on ``transport`` (started); each
    envelope goes as :func:`outgoing` makes it, to the topic ``naming`` gives (by default
    the transport's own, which its consumers subscribe to)."""
    naming = naming or transport.naming
    await transport.publish(
        [m if isinstance(m, OutgoingMessage) else outgoing(m, naming=naming) for m in messages]
    )


async def publish_with(
    settings: MessagingSettings, *messages: Envelope[Any] | OutgoingMessage
) -> None:
    """:func:`publish` on a transport of ``settings`` of its own, started for this and closed
    after: messages arriving as another service's relay would send them."""
    transport = create_transport(settings)
    await transport.start()
    try:
        await publish(transport, *messages)
    finally:
        await transport.close()


def on_kafka(settings: MessagingSettings, bootstrap_servers: str) -> MessagingSettings:
    """``settings`` on the Kafka cluster at ``bootstrap_servers``, tuned for tests: two
    partitions a topic, and a group that notices a stopped member within seconds."""
    kafka = KafkaSettings(
        bootstrap_servers=bootstrap_servers, partitions=2, session_timeout_ms=6000
    )
    return settings.model_copy(update={"transport": "kafka", "kafka": kafka})


async def eventually(
    check: Callable[[], Awaitable[bool]],
    *,
    within: float = 30.0,
    what: str = "condition",
    interval: float = 0.05,
) -> None:
    """Poll ``check`` until it holds; fail with ``what`` after ``within`` seconds."""
    deadline = time.monotonic() + within
    while not await check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {within} s waiting for {what}")
        await asyncio.sleep(interval)


async def wait_until(
    condition: Callable[[], bool], *, within: float = 30.0, what: str = "condition"
) -> None:
    """:func:`eventually` for a condition that needs no awaiting (a flag, a list's length)."""

    async def check() -> bool:
        return condition()

    await eventually(check, within=within, what=what, interval=0.02)


@asynccontextmanager
async def running(worker: Worker, *, start_within: float = 60.0) -> AsyncIterator[Worker]:
    """Run ``worker`` for the duration of the block, then stop it gracefully."""
    task = asyncio.create_task(worker.run())
    started = asyncio.create_task(worker.started.wait())
    await asyncio.wait({task, started}, timeout=start_within, return_when=asyncio.FIRST_COMPLETED)
    if task.done():
        started.cancel()
        await task  # re-raises why it could not start
        raise AssertionError("worker ended while starting")
    if not started.done():
        started.cancel()
        worker.stop()
        await task
        raise AssertionError(f"worker did not start within {start_within} s")
    try:
        yield worker
    finally:
        worker.stop()
        await task


def recording_spans() -> InMemorySpanExporter:
    """The spans this test process finishes from now on, in memory (emptied at each call).

    The first call of a test sets a TracerProvider that keeps spans in memory; tracing is
    then on until :func:`stop_recording_spans` (the workspace's ``conftest.py`` calls it
    after every test). ``get_finished_spans()`` gives the spans, in the order they ended."""
    global _recorded  # noqa: PLW0603  # one per process, as the TracerProvider is
    if _recorded is None:
        exporter = InMemorySpanExporter()
        provider = trace.get_tracer_provider()
        if not isinstance(provider, TracerProvider):
            provider = TracerProvider()
            trace.set_tracer_provider(provider)
        # A provider the test configured first records into memory as well.
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        _recorded = exporter
    _recorded.clear()
    return _recorded


def stop_recording_spans() -> None:
    """Take away the process's TracerProvider, whoever set it, so that the next test runs
    untraced, as a process with the ``none`` exporter does."""
    global _recorded  # noqa: PLW0603
    _recorded = None
    provider = trace.get_tracer_provider()
    if isinstance(provider, trace.ProxyTracerProvider):
        return
    if isinstance(provider, TracerProvider):
        provider.shutdown()
    # OpenTelemetry's API lets a process set its provider only once; its own test utilities
    # (opentelemetry.test.globals_test) undo it the same way.
    trace._TRACER_PROVIDER_SET_ONCE = Once()
    trace._TRACER_PROVIDER = None


@asynccontextmanager
async def operator_port(
    routes: Sequence[OperatorRoute],
    *,
    token: str | None = None,
    outage: Callable[[BaseException], bool] | None = None,
) -> AsyncIterator[str]:
    """``routes`` served as a worker's port serves them (behind ``token`` when given, a
    failure that ``outage`` recognises a 503), on a free port; its base URL."""
    server = HealthServer(
        CollectorRegistry(),
        dict,
        host="127.0.0.1",
        port=0,
        routes=routes,
        operator_token=token,
        outage=outage,
    )
    await server.start()
    try:
        yield f"http://127.0.0.1:{server.port}"
    finally:
        await server.stop()


class CollectedDeadLetters:
    """A transport's dead letters of one group, as a worker keeps them, for tests that run
    a consumer without a worker: each :meth:`list` first collects what waits on the
    broker into a store in memory."""

    def __init__(self, transport: Transport, group: str) -> None:
        self.store = MemoryDeadLetterStore()
        self.group = group
        self.collector = DeadLetterCollector(
            transport.dead_letter_courier, self.store, [group], interval=1.0
        )
        self.letters = DeadLetters(self.store, transport.dead_letter_courier, group)

    async def list(self) -> list[StoredDeadLetter]:
        while await self.collector.collect(self.group):
            pass
        return await self.letters.list()


@dataclass(frozen=True, slots=True)
class KeptDeadLetters:
    """Dead letters kept in memory as a worker keeps them, carried by ``courier``."""

    store: MemoryDeadLetterStore
    courier: DeadLetterCourier

    def of(self, group: str) -> DeadLetters:
        return DeadLetters(self.store, self.courier, group)

    async def count(self, groups: Sequence[str]) -> int:
        return sum(summary.count for summary in await self.store.summary(groups))


@asynccontextmanager
async def collecting_dead_letters(
    transport: Transport, groups: Sequence[str]
) -> AsyncIterator[KeptDeadLetters]:
    """The dead letters of ``groups`` as a worker keeps them (in memory here), collected
    from the broker in the background meanwhile: for tests that serve a worker's dead
    letters without running one (``dead_letter_routes`` takes the ``of`` of what this
    gives)."""
    kept = KeptDeadLetters(MemoryDeadLetterStore(), transport.dead_letter_courier)
    collector = DeadLetterCollector(kept.courier, kept.store, groups, interval=0.2)
    stopping = asyncio.Event()
    task = asyncio.create_task(collector.run(stopping))
    try:
        yield kept
    finally:
        stopping.set()
        await task
