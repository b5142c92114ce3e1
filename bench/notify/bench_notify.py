"""Order e-mails: throughput of one notification worker (``python -m shop.notification.worker``)
turning order events into e-mails. Run: ``make bench-notify``.

1. Instant provider (an SMTP sink that answers at once): e-mails/s of the worker at max in
   flight 32, next to a baseline measured in the same run, in turns, round after round: the
   same number of the same e-mails rendered and sent straight to the sink, at the same
   concurrency, by the service's own renderers and SMTP adapter, without bus, database or
   worker (``baseline_sender.py``, a process of its own like the worker). Measured apart:
   order confirmations (OrderCreated) and payment receipts, each with its invoice as a PDF
   (OrderPaid).
2. Slow provider (the service's fault injection: 0.3-3 s a send, no failures): e-mails/s of
   the worker at max in flight 1 and at 32, each over a fixed window, and the gain.

Postgres and the Kafka-protocol broker are embedded (or the ones SHOP_DEVSTACK_* name); the
SMTP sink (``shop.devstack.SmtpSink``) runs in a thread of this process. Every worker gets a
fresh database, bus namespace and consumer group, and fresh orders. Rates are timed from the
first e-mail's arrival at the sink, so the worker's start-up and its consumer-group join
(several seconds on Tansu) are never counted. Every e-mail is checked: none missing or
twice, one row in ``order_notifications`` for each. The CPU share of each process while
measured is printed too: on two cores the worker, the sink, PostgreSQL and the broker
compete, and a rate means little without it.

Directly: ``python bench/notify/bench_notify.py [--events N] [--rounds N] [--seconds S]
[--in-flight N]``; the defaults take about two and a half minutes on two cores.
"""

from __future__ import annotations

import argparse
import asyncio
import bisect
import contextlib
import logging
import math
import os
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Final

import asyncpg
import structlog

from shop.contracts import Envelope, OrderCreated, encode, wrap
from shop.contracts.examples import examples
from shop.contracts.orders import OrderFacts
from shop.devstack import SmtpSink, TansuBroker
from shop.devstack.cpu import CORES, machine_ticks, own_seconds, process_seconds, tree_seconds
from shop.devstack.errors import DevstackError
from shop.devstack.parts import Part, kafka_part, postgres_part
from shop.devstack.ports import free_port
from shop.devstack.postgres import EmbeddedPostgres, PostgresServer
from shop.devstack.process import ManagedProcess
from shop.devstack.settings import DevstackSettings
from shop.messaging import KafkaSettings, MessagingSettings
from shop.messaging.testing import publish_with
from shop.notification.domain.emails import CONFIRMATION, RECEIPT, OrderEmail
from shop.notification.migrations import migrate
from shop.notification.service_layer.notifier import message_id_domain
from shop.notification.settings import FaultSettings, SmtpSettings

HERE = Path(__file__).resolve().parent
PARTITIONS = 6
"""Of every topic, as in the worker's default configuration."""
SLOW = FaultSettings(enabled=True, min_latency=0.3, max_latency=3.0, failure_rate=0.0, seed=7)
"""The slow provider. Seeded, so that both runs of it draw the same latencies."""
DRAIN_TIMEOUT = SLOW.max_latency + 7
"""Longer than any send may take: a stopped worker finishes and records every e-mail it
started, so the e-mails and the rows can be compared exactly."""
STALL = 30.0
"""Seconds without a new e-mail after which a scenario is given up as stuck."""
JOIN = 120.0
"""Longest wait for a new worker's first e-mail: start-up and consumer-group join."""
MESSAGE_ID_DOMAIN = message_id_domain(SmtpSettings().sender)


@dataclass(frozen=True)
class Infrastructure:
    postgres: PostgresServer
    bootstrap: str
    sink: SmtpSink
    postgres_pid: int | None
    """None when the server is someone else's: its CPU is then counted in "other"."""
    kafka_pid: int | None
    workdir: Path


@dataclass
class Figures:
    """One scenario's e-mails after the first, the seconds since the first, and the CPU
    shares meanwhile, summed over its rounds."""

    label: str
    emails: int = 0
    seconds: float = 0.0
    cpu_seconds: Counter[str] = field(default_factory=Counter)
    round_rates: list[float] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    def add_round(self, emails: int, seconds: float, shares: dict[str, float]) -> None:
        self.emails += emails
        self.seconds += seconds
        self.round_rates.append(emails / seconds if seconds else float("nan"))
        self.cpu_seconds.update({part: share * seconds for part, share in shares.items()})

    @property
    def rate(self) -> float:
        return self.emails / self.seconds if self.seconds else float("nan")

    @property
    def cpu(self) -> dict[str, float]:
        return {part: used / self.seconds for part, used in self.cpu_seconds.items()}


# --- infrastructure ---------------------------------------------------------------------


@contextlib.contextmanager
def infrastructure(workdir: Path) -> Iterator[Infrastructure]:
    """Postgres, a Kafka-protocol broker and the SMTP sink, stopped whatever happens."""
    settings = DevstackSettings()
    postgres, server = postgres_part(settings, workdir)
    kafka, cluster = kafka_part(settings, workdir)
    sink = SmtpSink()
    parts: list[Part] = [postgres, kafka, sink]
    try:
        for part in parts:
            part.spawn()
        for part in parts:
            part.wait_ready()
        yield Infrastructure(
            postgres=server,
            bootstrap=cluster.bootstrap_servers,
            sink=sink,
            postgres_pid=postgres.process.pid if isinstance(postgres, EmbeddedPostgres) else None,
            kafka_pid=kafka.process.pid if isinstance(kafka, TansuBroker) else None,
            workdir=workdir,
        )
    finally:
        for part in reversed(parts):
            part.stop()


@contextlib.contextmanager
def fresh_database(server: PostgresServer) -> Iterator[str]:
    """A new database migrated by the service's own migrations; dropped afterwards (it
    matters when the server is not the embedded one)."""
    name = asyncio.run(server.create_database(prefix="bench_notify"))
    try:
        url = server.url(name)
        migrate(url)
        yield url
    finally:
        with contextlib.suppress(Exception):
            asyncio.run(server.drop_database(name))


def fresh_namespace(scenario: str) -> str:
    """Topics and consumer group of their own: no scenario sees another's events."""
    return f"bn-{uuid.uuid4().hex[:8]}-{scenario}"


# --- events and what they should become -------------------------------------------------


MAILS: Final = {"confirmation": CONFIRMATION, "receipt": RECEIPT}
"""What is measured with the instant provider: order confirmations (OrderCreated), and
receipts, which carry the order's invoice as a PDF (OrderPaid)."""


def order_events(count: int, mail: OrderEmail = CONFIRMATION) -> list[Envelope[OrderFacts]]:
    """``count`` events of new orders that each send ``mail`` (the contract's example with
    fresh ids, numbers and customers), keyed by order as order-service's relay keys them."""
    example = examples()[mail.event].model_dump()
    batch = uuid.uuid4().hex[:4].upper()
    events: list[Envelope[OrderFacts]] = []
    for n in range(count):
        order_id = uuid.uuid4()
        fresh = {
            "order_id": order_id,
            "order_number": f"SK-{batch}-{n:05d}",
            "customer_id": f"cust_bench_{n}",
            "customer_email": f"bench{n}@example.com",
        }
        if mail.event is OrderCreated:
            fresh["placed_at"] = datetime.now(UTC)
        event = mail.event.model_validate({**example, **fresh})
        events.append(wrap(event, key=str(order_id)))
    return events


def message_ids(events: list[Envelope[OrderFacts]], mail: OrderEmail = CONFIRMATION) -> set[str]:
    """The Message-IDs the worker gives these orders' e-mails."""
    kind = mail.kind.value
    return {f"<{kind}.{e.payload.order_id}@{MESSAGE_ID_DOMAIN}>" for e in events}


async def publish(bootstrap: str, namespace: str, events: list[Envelope[OrderFacts]]) -> None:
    """Put ``events`` on the bus as order-service's relay would."""
    settings = MessagingSettings(
        transport="kafka",
        namespace=namespace,
        kafka=KafkaSettings(bootstrap_servers=bootstrap, partitions=PARTITIONS),
    )
    await publish_with(settings, *events)


async def recorded_message_ids(database_url: str) -> list[str]:
    """Message-IDs of the rows of ``order_notifications``: the e-mails marked as sent."""
    connection = await asyncpg.connect(database_url)
    try:
        rows = await connection.fetch("SELECT message_id FROM order_notifications")
        return [str(row["message_id"]) for row in rows]
    finally:
        await connection.close()


def settled_rows(database_url: str, expected: int, within: float = 10.0) -> list[str]:
    """The rows once there are ``expected`` of them (each is written just after its
    e-mail was accepted), or whatever there is after ``within`` seconds."""
    deadline = time.monotonic() + within
    while True:
        rows = asyncio.run(recorded_message_ids(database_url))
        if len(rows) >= expected or time.monotonic() > deadline:
            return rows
        time.sleep(0.1)


def received_message_ids(sink: SmtpSink) -> list[str]:
    return [str(mail.message["Message-ID"]) for mail in sink.messages]


def delivery_problems(
    received: list[str], published: set[str], recorded: list[str], *, all_due: bool
) -> list[str]:
    """What went wrong with the e-mails: twice, unasked for, missing (when ``all_due``),
    or not matching the rows that say they were sent."""
    problems = []
    twice = [mid for mid, times in Counter(received).items() if times > 1]
    if twice:
        problems.append(f"{len(twice)} e-mails arrived more than once, e.g. {twice[0]}")
    unasked = set(received) - published
    if unasked:
        problems.append(f"{len(unasked)} e-mails for orders never published")
    missing = published - set(received)
    if all_due and missing:
        problems.append(f"{len(missing)} of {len(published)} e-mails never arrived")
    if sorted(recorded) != sorted(received):
        unmarked = len(set(received) - set(recorded))
        unsent = len(set(recorded) - set(received))
        problems.append(
            f"{len(recorded)} rows in order_notifications for {len(received)} e-mails "
            f"({unmarked} e-mails without a row, {unsent} rows without an e-mail)"
        )
    return problems


# --- CPU accounting ---------------------------------------------------------------------


class CpuMeter:
    """Shares of the machine's CPU between :meth:`start` and :meth:`stop`; 1.0 is one core
    busy all along. ``sink`` is this process: the SMTP sink's thread, almost all of it."""

    def __init__(self, measured_pid: int, infra: Infrastructure) -> None:
        self.pids = {
            "measured": measured_pid,
            "postgres": infra.postgres_pid,
            "kafka": infra.kafka_pid,
        }
        self.shares: dict[str, float] = {}

    def _sample(self) -> dict[str, float]:
        busy, total = machine_ticks()
        return {
            "wall": time.perf_counter(),
            "busy": busy,
            "total": total,
            "sink": own_seconds(),
            "measured": process_seconds(self.pids["measured"]),
            "postgres": tree_seconds(self.pids["postgres"]),
            "kafka": process_seconds(self.pids["kafka"]),
        }

    def start(self) -> None:
        self.started = self._sample()

    def stop(self) -> None:
        ended = self._sample()
        delta = {name: ended[name] - self.started[name] for name in ended}
        wall = delta["wall"]
        machine = delta["busy"] / max(1.0, delta["total"]) * CORES
        shares = {part: delta[part] / wall for part in ("measured", "sink", "postgres", "kafka")}
        for part in ("postgres", "kafka"):
            if self.pids[part] is None:
                shares[part] = float("nan")  # someone else's server: counted in "other"
        known = sum(share for share in shares.values() if not math.isnan(share))
        shares["other"] = max(0.0, machine - known)
        shares["idle"] = max(0.0, CORES - machine)
        self.shares = shares


# --- watching the sink --------------------------------------------------------------------


class ArrivalClock:
    """When each e-mail reached the sink, as seen by a thread that waits on the sink's
    arrivals (it wakes within a millisecond or so), with callbacks run on that thread as
    soon as a count of e-mails is reached: the CPU meter's start and stop."""

    def __init__(self, sink: SmtpSink, at_count: dict[int, Callable[[], None]]) -> None:
        self.sink = sink
        self.at_count = dict(at_count)
        self.times: list[float] = []
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="arrival-clock", daemon=True)

    def __enter__(self) -> ArrivalClock:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stopping.set()
        self._thread.join()

    def _watch(self) -> None:
        while not self._stopping.is_set():
            try:
                count = len(self.sink.wait_for(len(self.times) + 1, timeout=0.1))
            except TimeoutError:
                continue
            now = time.perf_counter()
            self.times.extend([now] * (count - len(self.times)))
            for reached in sorted(n for n in self.at_count if n <= count):
                self.at_count.pop(reached)()

    @property
    def count(self) -> int:
        return len(self.times)

    def wait_for(self, count: int, alive: Callable[[], bool], first_within: float) -> bool:
        """Until ``count`` e-mails have arrived: False if the sender exits, the first one
        does not come within ``first_within`` s, or a later one not within STALL s."""
        seen, since = self.count, time.monotonic()
        while self.count < count:
            if self.count != seen:
                seen, since = self.count, time.monotonic()
            patience = first_within if seen == 0 else STALL
            if not alive() or time.monotonic() - since > patience:
                return False
            time.sleep(0.02)
        return True

    def arrived_by(self, moment: float) -> int:
        return bisect.bisect_right(self.times, moment)


# --- the processes measured -----------------------------------------------------------------


@dataclass(frozen=True)
class WorkerSetup:
    """One worker's configuration: its own database and bus namespace."""

    name: str
    database_url: str
    namespace: str
    in_flight: int
    faults: FaultSettings | None = None
    """The slow provider; None for the instant one."""


def inherited_env() -> dict[str, str]:
    """This process's environment without SHOP_NOTIFICATION_* variables: the benchmark
    decides the whole configuration of what it measures (a SMTP__SENDER of the shell, say,
    would change the Message-IDs the checks expect)."""
    return {k: v for k, v in os.environ.items() if not k.startswith("SHOP_NOTIFICATION_")}


def worker_env(infra: Infrastructure, setup: WorkerSetup, health_port: int) -> dict[str, str]:
    in_flight, faults = setup.in_flight, setup.faults
    env = {
        **inherited_env(),
        "SHOP_NOTIFICATION_ENVIRONMENT": "test",
        "SHOP_NOTIFICATION_DATABASE_URL": setup.database_url,
        "SHOP_NOTIFICATION_SMTP__HOST": infra.sink.address.host,
        "SHOP_NOTIFICATION_SMTP__PORT": str(infra.sink.address.port),
        "SHOP_NOTIFICATION_WORKER_HEALTH_PORT": str(health_port),
        "SHOP_NOTIFICATION_LOG_JSON": "true",
        "SHOP_NOTIFICATION_MAX_IN_FLIGHT": str(in_flight),
        "SHOP_NOTIFICATION_MESSAGING__DRAIN_TIMEOUT": str(DRAIN_TIMEOUT),
        "SHOP_NOTIFICATION_MESSAGING__TRANSPORT": "kafka",
        "SHOP_NOTIFICATION_MESSAGING__NAMESPACE": setup.namespace,
        "SHOP_NOTIFICATION_MESSAGING__KAFKA__BOOTSTRAP_SERVERS": infra.bootstrap,
        "SHOP_NOTIFICATION_MESSAGING__KAFKA__PARTITIONS": str(PARTITIONS),
        "SHOP_NOTIFICATION_FAULTS__ENABLED": "false",
    }
    if faults is not None:
        env |= {
            "SHOP_NOTIFICATION_FAULTS__ENABLED": "true",
            "SHOP_NOTIFICATION_FAULTS__MIN_LATENCY": str(faults.min_latency),
            "SHOP_NOTIFICATION_FAULTS__MAX_LATENCY": str(faults.max_latency),
            "SHOP_NOTIFICATION_FAULTS__FAILURE_RATE": str(faults.failure_rate),
            "SHOP_NOTIFICATION_FAULTS__SEED": str(faults.seed),
        }
    return env


def ready(health_port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{health_port}/readyz", timeout=2) as reply:
            return bool(reply.status == 200)
    except (urllib.error.URLError, OSError):
        return False


@contextlib.contextmanager
def running_worker(infra: Infrastructure, setup: WorkerSetup) -> Iterator[ManagedProcess]:
    """A worker process, ready (/readyz answers 200), stopped by its pid whatever happens:
    SIGTERM, then a kill if it has not drained and exited in time."""
    health_port = free_port()
    worker = ManagedProcess(
        setup.name,
        [sys.executable, "-m", "shop.notification.worker"],
        infra.workdir / f"{setup.name}.log",
        env=worker_env(infra, setup, health_port),
    )
    try:
        worker.start()
        worker.wait_until(lambda: ready(health_port), 60, "ready")
        yield worker
    finally:
        worker.stop(timeout=DRAIN_TIMEOUT + 20)


def pid_of(process: ManagedProcess) -> int:
    if process.pid is None:
        raise DevstackError(f"{process.name} was never started")
    return process.pid


# --- scenarios ----------------------------------------------------------------------------


def worker_round(
    infra: Infrastructure,
    worker: ManagedProcess,
    setup: WorkerSetup,
    count: int,
    figures: Figures,
    *,
    mail: OrderEmail = CONFIRMATION,
) -> None:
    """Publish ``count`` orders' events to a worker that is ready and has joined its group;
    time its e-mails from the first's arrival to the last's."""
    events = order_events(count, mail)
    published = message_ids(events, mail)
    before = set(asyncio.run(recorded_message_ids(setup.database_url)))
    infra.sink.clear()
    meter = CpuMeter(pid_of(worker), infra)
    with ArrivalClock(infra.sink, {1: meter.start, count: meter.stop}) as clock:
        asyncio.run(publish(infra.bootstrap, setup.namespace, events))
        finished = clock.wait_for(count, worker.running, first_within=JOIN)
    received = received_message_ids(infra.sink)
    # The key (order, kind) allows one row an e-mail: this round's rows are the new ones.
    after = settled_rows(setup.database_url, len(before) + len(received))
    recorded = sorted(set(after) - before)
    figures.problems += delivery_problems(received, published, recorded, all_due=True)
    add_timed_round(figures, clock, meter, finished, count)


def baseline_round(
    infra: Infrastructure, count: int, in_flight: int, figures: Figures, mail: OrderEmail
) -> None:
    """The same work without the worker: ``count`` new orders' e-mails rendered and sent
    by ``baseline_sender.py``; timed from the first's arrival to the last's."""
    events = order_events(count, mail)
    events_file = infra.workdir / "baseline-events.jsonl"
    events_file.write_bytes(b"\n".join(encode(event) for event in events))
    address = infra.sink.address
    sender = ManagedProcess(
        "baseline",
        [
            sys.executable, str(HERE / "baseline_sender.py"), str(events_file),
            address.host, str(address.port), str(in_flight), mail.kind.value,
        ],
        infra.workdir / "baseline.log",
        env=inherited_env(),
    )  # fmt: skip
    infra.sink.clear()
    try:
        sender.start()
        # Its first e-mail comes after a second of imports at least: the clock and the
        # meter are in place long before.
        meter = CpuMeter(pid_of(sender), infra)
        with ArrivalClock(infra.sink, {1: meter.start, count: meter.stop}) as clock:
            finished = clock.wait_for(count, sender.running, first_within=60)
    finally:
        sender.stop(timeout=10)
    received = received_message_ids(infra.sink)
    # No database: the e-mails are checked against themselves as "recorded".
    published = message_ids(events, mail)
    figures.problems += delivery_problems(received, published, received, all_due=True)
    add_timed_round(figures, clock, meter, finished, count)


def add_timed_round(
    figures: Figures, clock: ArrivalClock, meter: CpuMeter, finished: bool, count: int
) -> None:
    """The round's rate from its first e-mail to its last; a round that got stuck is
    reported and left out of the figures (its CPU meter never stopped)."""
    if not finished:
        figures.problems.append(f"stuck after {clock.count} of {count} e-mails; round left out")
        return
    figures.add_round(clock.count - 1, clock.times[-1] - clock.times[0], meter.shares)


def instant_provider(
    infra: Infrastructure, events: int, rounds: int, in_flight: int, mail: OrderEmail
) -> tuple[Figures, Figures]:
    """Baseline and worker in turns, round after round: the machine's speed drifts over
    minutes, and alternating lets both see the same drift. One worker serves all rounds
    (it joins its group once)."""
    name = mail.kind.value.split("_", 1)[-1]
    baseline = Figures(f"baseline ({name}s)")
    service = Figures(f"worker, instant ({name}s)")
    with fresh_database(infra.postgres) as database_url:
        setup = WorkerSetup("worker-instant", database_url, fresh_namespace("instant"), in_flight)
        with running_worker(infra, setup) as worker:
            for _ in range(rounds):
                baseline_round(infra, events, in_flight, baseline, mail)
                worker_round(infra, worker, setup, events, service, mail=mail)
    return baseline, service


def events_to_keep_busy(in_flight: int, seconds: float) -> int:
    """Enough orders that the worker cannot run dry within ``seconds`` of its first e-mail,
    even if every send took the shortest latency (with a margin for the join)."""
    return math.ceil(in_flight / SLOW.min_latency * (seconds + 10))


def slow_provider(infra: Infrastructure, in_flight: int, seconds: float) -> Figures:
    """A worker with fault injection's latencies, a backlog larger than it can send, and
    e-mails counted for ``seconds`` after the first one arrived."""
    figures = Figures(f"worker, slow, max in flight {in_flight}")
    events = order_events(events_to_keep_busy(in_flight, seconds))
    published = message_ids(events)
    namespace = fresh_namespace(f"slow{in_flight}")
    with fresh_database(infra.postgres) as database_url:
        setup = WorkerSetup(f"worker-slow-{in_flight}", database_url, namespace, in_flight, SLOW)
        infra.sink.clear()
        with running_worker(infra, setup) as worker:
            meter = CpuMeter(pid_of(worker), infra)
            with ArrivalClock(infra.sink, {1: meter.start}) as clock:
                asyncio.run(publish(infra.bootstrap, setup.namespace, events))
                if not clock.wait_for(1, worker.running, first_within=JOIN):
                    raise SystemExit(f"{setup.name} sent nothing; see {worker.log_path}")
                time.sleep(max(0.0, clock.times[0] + seconds - time.perf_counter()))
                meter.stop()
                counted = clock.arrived_by(clock.times[0] + seconds) - 1
                # Stopped with the clock still running: the sends under way finish before
                # it exits (see DRAIN_TIMEOUT), and are checked below like the others.
                worker.stop(timeout=DRAIN_TIMEOUT + 20)
        received = received_message_ids(infra.sink)
        recorded = asyncio.run(recorded_message_ids(database_url))
    figures.problems += delivery_problems(received, published, recorded, all_due=False)
    figures.add_round(counted, seconds, meter.shares)
    return figures


# --- output -------------------------------------------------------------------------------


def ratio(numerator: float, denominator: float) -> float:
    return numerator / denominator if denominator else float("nan")


def report_instant(
    args: argparse.Namespace, baseline: Figures, service: Figures, mail: OrderEmail
) -> None:
    attached = ", each with its invoice (PDF)" if mail.invoice else ""
    print(
        f"instant provider, {mail.kind.value} e-mails{attached}: {args.rounds} rounds of "
        f"{args.events} {mail.event.__name__} events per sender, in turns; max in flight "
        f"{args.in_flight}"
    )
    print(
        "  timed from the first e-mail's arrival at the sink to the last: the worker was "
        "ready (/readyz) before the events were published, and its group join is before "
        "the clock starts"
    )
    print(f"  {'':34}{'e-mails/s':>10}   by round")
    for figures in (baseline, service):
        rounds = ", ".join(f"{rate:,.0f}" for rate in figures.round_rates)
        print(f"  {figures.label:34}{figures.rate:10,.1f}   {rounds}")
    print(f"  {'ratio worker/baseline':34}{ratio(service.rate, baseline.rate):10.2f}")
    worker_cpu = service.cpu.get("measured", float("nan"))
    cost = ratio(cpu_per_email(service), cpu_per_email(baseline))
    # A worker near a full core is CPU-bound: its rate then says more about its cost per
    # e-mail than about the provider.
    bound = f"; the worker used {worker_cpu:.0%} of a core" if worker_cpu >= 0.9 else ""
    print(f"  {'CPU per e-mail, worker/baseline':34}{cost:10.2f}   (see below{bound})")


def report_slow(args: argparse.Namespace, single: Figures, many: Figures) -> None:
    mean_latency = (SLOW.min_latency + SLOW.max_latency) / 2
    print(
        f"slow provider: fault injection on, {SLOW.min_latency:g}-{SLOW.max_latency:g} s "
        f"a send (seed {SLOW.seed}), no failures; e-mails counted for {args.seconds:g} s "
        "after the first one arrived (events published once the worker was ready)"
    )
    print(f"  {'':34}{'e-mails/s':>10}{'e-mails':>9}{'ideal/s':>9}")
    for figures, in_flight in ((single, 1), (many, args.in_flight)):
        ideal = in_flight / mean_latency
        print(f"  {figures.label:34}{figures.rate:10,.2f}{figures.emails:9d}{ideal:9.2f}")
    gain = ratio(many.rate, single.rate)
    print(f"  {f'ratio {args.in_flight}/1':34}{gain:10.1f}   (ideal {args.in_flight})")
    print(f"  ideal/s: max in flight / mean latency ({mean_latency:g} s)")


def cpu_per_email(figures: Figures) -> float:
    """Milliseconds of the sender's CPU per e-mail."""
    return ratio(figures.cpu.get("measured", float("nan")) * 1000, figures.rate)


def report_cpu(scenarios: list[Figures]) -> None:
    print(f"CPU while measured, % of one core ({CORES} cores: {100 * CORES}%)")
    print(
        f"  {'':34}{'sender':>7}{'ms/e-mail':>10}{'sink':>6}{'postgres':>9}{'kafka':>7}"
        f"{'other':>7}{'idle':>6}"
    )
    for figures in scenarios:
        cpu = figures.cpu
        if not cpu:
            print(f"  {figures.label:34}{'nothing measured':>30}")
            continue
        print(
            f"  {figures.label:34}{cpu['measured']:7.0%}{cpu_per_email(figures):10.2f}"
            f"{cpu['sink']:6.0%}"
            f"{share(cpu['postgres'], 9)}{share(cpu['kafka'], 7)}{cpu['other']:7.0%}"
            f"{cpu['idle']:6.0%}"
        )
    print(
        "  sender: the worker process (the baseline's own process on its line); "
        "sink: this process, the SMTP sink's thread almost all of it"
    )


def share(value: float, width: int) -> str:
    return f"{'n/a':>{width}}" if math.isnan(value) else f"{value:{width}.0%}"


def report_checks(scenarios: list[Figures]) -> None:
    problems = [(f.label, problem) for f in scenarios for problem in f.problems]
    if not problems:
        print(
            "checks: every e-mail arrived once, each with its row in order_notifications "
            "(the slow runs: every e-mail sent before the worker stopped)"
        )
        return
    print("checks: each e-mail once, none missing, one row in order_notifications for each")
    for label, problem in problems:
        print(f"  !! {label}: {problem}")


def producer_id_refusal(record: logging.LogRecord) -> bool:
    """False for aiokafka's error line about a refused producer id (Tansu refuses them)."""
    return not record.getMessage().startswith("Unexpected error during InitProducerIdRequest")


def quiet_bus_client_logs() -> None:
    """Tansu refuses idempotent producers: on every publish the transport falls back with a
    warning, and aiokafka logs the refusal as an error. Known and harmless here, and it
    would break up the table; aiokafka's other errors still show."""
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.ERROR))
    logging.getLogger("aiokafka.producer.sender").addFilter(producer_id_refusal)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--events", type=int, default=1000, help="e-mails per round, per sender (instant)"
    )
    parser.add_argument(
        "--rounds", type=int, default=3, help="baseline and worker measured in turns, this often"
    )
    parser.add_argument(
        "--seconds", type=float, default=30.0, help="window of each slow-provider run"
    )
    parser.add_argument(
        "--mails",
        default="confirmation,receipt",
        help=f"measured with the instant provider, comma-separated: {', '.join(MAILS)}",
    )
    parser.add_argument(
        "--in-flight", type=int, default=32, help="max in flight (the slow runs: also 1)"
    )
    args = parser.parse_args()
    args.events = max(2, args.events)
    quiet_bus_client_logs()
    started = time.monotonic()
    with (
        tempfile.TemporaryDirectory(prefix="bench-notify-") as workdir,
        infrastructure(Path(workdir)) as infra,
    ):
        instant = {
            name: instant_provider(infra, args.events, args.rounds, args.in_flight, MAILS[name])
            for name in args.mails.split(",")
        }
        single = slow_provider(infra, 1, args.seconds)
        many = slow_provider(infra, args.in_flight, args.seconds)
    print("notification worker: order events -> order e-mails -> SMTP sink")
    for name, (baseline, service) in instant.items():
        report_instant(args, baseline, service, MAILS[name])
    report_slow(args, single, many)
    scenarios = [*(f for pair in instant.values() for f in pair), single, many]
    report_cpu(scenarios)
    report_checks(scenarios)
    print(f"run time {time.monotonic() - started:.0f} s")


if __name__ == "__main__":
    main()
