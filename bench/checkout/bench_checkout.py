"""Checkout over HTTP: order-service's ``POST /v1/orders`` next to bare FastAPI + raw asyncpg
endpoints (``baseline_app.py``), measured in the same run. Run: ``make bench-checkout``.

- saturation (closed loop): orders/s and latency at ``--connections`` clients, each sending
  its next checkout as soon as the last is answered, for
  - *spread* baskets (1 to 3 lines over the catalogue): the service next to the baseline
    doing the same SQL work;
  - with ``--product hot`` (the default), also a *hot* product (the same baskets, each with
    the same product as its first line, a flash sale): the service next to its own spread
    figure, and next to
    the naive stock-first checkout (the products locked first, ``/stock-first/v1/orders``);
- latency at a fixed offered rate (open loop, ``--rate``): spread checkouts sent on schedule
  whatever the answers do, each latency from its scheduled time
  (:mod:`shop.devstack.open_loop`), for the service and the baseline at the same rates.

Both servers run the same way (one uvicorn process each, uvloop and httptools, log level
warning, 32 database connections) on their own database of the same PostgreSQL, migrated by
the service's own migrations and seeded with a catalogue whose stock never runs out. They get
the same requests: the same baskets in the same order, tokens of the same customers, a new
Idempotency-Key each. Every measurement runs in turns with the others, round after round.
Client, servers and PostgreSQL share this machine's cores, so the output also shows how the
CPU was shared while each was measured. The output ends with a summary of each figure beside
its baseline (``--json PATH`` writes the same figures as JSON).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import functools
import json
import math
import os
import random
import signal
import statistics
import sys
import tempfile
import time
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import aiohttp
import asyncpg
import httpx
import uvloop

from shop.devstack.cpu import CORES, family_seconds, machine_ticks, own_seconds, process_seconds
from shop.devstack.open_loop import OpenLoopFigures, Send, open_loop
from shop.devstack.parts import postgres_part
from shop.devstack.ports import free_port
from shop.devstack.postgres import EmbeddedPostgres
from shop.devstack.process import ManagedProcess, port_accepts
from shop.devstack.settings import DevstackSettings
from shop.order.adapters.catalogue import SEED_PRODUCTS
from shop.order.migrations import migrate
from shop.simulators.identity import issue_token

HERE = Path(__file__).resolve().parent
JWT_SECRET = "bench-secret-of-the-checkout-benchmark"
STOCK = 2_000_000_000
"""Near the int4 limit of products.stock: no checkout of a run is refused for stock."""
CUSTOMERS = 64
BASKETS = 4096
HOT_SKU = "SERUM-NIA-30"
"""The flash sale's product: every hot checkout buys one of it."""
OUTBOX_ROWS_PER_ORDER = 1
"""What a checkout adds to the outbox: OrderCreated alone (the payment window is
payment-service's, nothing is scheduled). The relay does not run here, so the rows stay."""
LATE_MS = 5.0
"""An open-loop request sent later than this after its scheduled time counts as late."""

Post = Callable[[str, bytes, dict[str, str]], Awaitable[tuple[int, bytes]]]
"""Send one checkout (path, body, headers); its status and body."""


@dataclass
class Server:
    name: str
    label: str
    argv: list[str]
    env: dict[str, str]
    database: str
    port: int
    profiled: bool = False
    """Runs profiled_service.py: SIGUSR1 starts cProfile, SIGUSR2 stops it and writes."""
    pid: int | None = None
    """Once started."""


@dataclass(frozen=True)
class Workload:
    name: str
    bodies: list[bytes]


@dataclass(frozen=True)
class Rate:
    """An offered rate: requests/s, or a fraction of the reference's saturation figure."""

    text: str
    value: float
    relative: bool

    def per_second(self, reference: float) -> float:
        return self.value * reference if self.relative else self.value


@dataclass
class Plan:
    """What every measurement gets: the same requests, at the same concurrency, for as long."""

    seconds: float
    """Measured per server and workload in each round, closed loop and at each rate."""
    rounds: int
    warmup: float
    connections: int
    open_connections: int
    client: str
    rates: list[Rate]
    tokens: list[str]
    postgres_pid: int | None
    workdir: Path


@dataclass
class Figures:
    seconds: float = 0.0
    latencies: list[float] = field(default_factory=list)
    errors: Counter[str] = field(default_factory=Counter)
    cpu_seconds: Counter[str] = field(default_factory=Counter)
    round_rates: list[float] = field(default_factory=list)
    shape: object = None

    @property
    def cpu(self) -> dict[str, float]:
        """Average shares over the measured rounds."""
        return {part: used / self.seconds for part, used in self.cpu_seconds.items()}

    def add_round(self, round_: Figures, cpu: dict[str, float]) -> None:
        self.round_rates.append(round_.rate)
        self.seconds += round_.seconds
        self.latencies += round_.latencies
        self.errors += round_.errors
        self.cpu_seconds.update({part: share * round_.seconds for part, share in cpu.items()})

    @property
    def rate(self) -> float:
        return len(self.latencies) / self.seconds if self.seconds else 0.0

    def percentile(self, fraction: float) -> float:
        ordered = sorted(self.latencies) or [float("nan")]
        return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


@dataclass
class Contestant:
    """One server on one workload: what is measured in each round."""

    key: str
    """As in the JSON figures: baseline, service, stock_first_hot, service_hot."""
    label: str
    server: Server
    path: str
    workload: Workload
    profiled: bool = False
    figures: Figures = field(default_factory=Figures)
    offered: dict[str, OpenLoopFigures] = field(default_factory=dict)
    """Open-loop figures by rate (its text, as given)."""


# --- infrastructure and data ------------------------------------------------------------


@contextlib.contextmanager
def postgres(workdir: Path) -> Iterator[tuple[str, str, int | None]]:
    """Two empty databases in one PostgreSQL (embedded, or SHOP_DEVSTACK_POSTGRES_URL's),
    and the embedded server's pid (None for someone else's server)."""
    part, server = postgres_part(DevstackSettings(), workdir)
    databases: list[str] = []
    try:
        part.spawn()
        part.wait_ready()
        for _ in range(2):
            databases.append(asyncio.run(server.create_database(prefix="bench")))
        pid = part.process.pid if isinstance(part, EmbeddedPostgres) else None
        yield server.url(databases[0]), server.url(databases[1]), pid
    finally:
        with contextlib.suppress(Exception):
            for database in databases:
                asyncio.run(server.drop_database(database))
        part.stop()


def catalogue(size: int) -> list[tuple[str, str, str, int]]:
    """(sku, name, description, price): the development catalogue, then made-up products
    up to ``size``."""
    products = [
        (str(p["sku"]), str(p["name"]), str(p["description"]), int(str(p["price"])))
        for p in SEED_PRODUCTS
    ]
    products += [
        (f"BENCH-{n:05d}", f"Bench Product {n}", "", 10_000 + 1_000 * (n % 100))
        for n in range(len(products), size)
    ]
    return products[:size]


async def seed(url: str, products: list[tuple[str, str, str, int]]) -> None:
    connection = await asyncpg.connect(url)
    try:
        await connection.executemany(
            "INSERT INTO products (sku, name, description, price, stock) "
            "VALUES ($1, $2, $3, $4, $5)",
            [(*product, STOCK) for product in products],
        )
    finally:
        await connection.close()


def baskets(count: int, skus: list[str]) -> list[bytes]:
    """Bodies of 1 to 3 distinct products of ``skus``, 1 to 3 of each (fixed seed)."""
    chooser = random.Random(20261203)
    bodies = []
    for _ in range(count):
        lines = chooser.sample(skus, chooser.randint(1, 3))
        items = [{"sku": sku, "quantity": chooser.randint(1, 3)} for sku in lines]
        bodies.append(json.dumps({"items": items}).encode())
    return bodies


def with_the_hot_product(bodies: list[bytes]) -> list[bytes]:
    """The same baskets, each with its first line made of the hot product (the line already
    of it, when there is one, swapped in first): every checkout wants it, and the work per
    order (lines, units) is the spread baskets' own, so the two figures compare."""
    hot_bodies = []
    for body in bodies:
        items = json.loads(body)["items"]
        skus = [item["sku"] for item in items]
        if HOT_SKU in skus:
            at = skus.index(HOT_SKU)
            items[0], items[at] = items[at], items[0]
        else:
            items[0] = {**items[0], "sku": HOT_SKU}
        hot_bodies.append(json.dumps({"items": items}).encode())
    return hot_bodies


def customer_tokens() -> list[str]:
    hours = timedelta(hours=2)
    return [
        issue_token(JWT_SECRET, f"cust_bench_{i}", f"bench{i}@example.com", valid_for=hours)
        for i in range(CUSTOMERS)
    ]


# --- CPU accounting ---------------------------------------------------------------------


class CpuMeter:
    """Shares of the machine's CPU while the load ran; 1.0 is one core busy all along.
    ``other`` is whatever else ran on the machine meanwhile (PostgreSQL too, when it is
    not ours)."""

    def __init__(self, server_pid: int, postgres_pid: int | None) -> None:
        self.server_pid = server_pid
        self.postgres_pid = postgres_pid
        self.shares: dict[str, float] = {}

    def _postgres_seconds(self) -> float:
        # With the backends that ended meanwhile (a pool renews its connections).
        return family_seconds(self.postgres_pid) if self.postgres_pid else 0.0

    def __enter__(self) -> CpuMeter:
        self.started = time.perf_counter()
        self.machine = machine_ticks()
        self.server = process_seconds(self.server_pid)
        self.postgres = self._postgres_seconds()
        self.client = own_seconds()
        return self

    def __exit__(self, *_: object) -> None:
        wall = time.perf_counter() - self.started
        busy, total = machine_ticks()
        machine = (busy - self.machine[0]) / max(1, total - self.machine[1]) * CORES
        server = (process_seconds(self.server_pid) - self.server) / wall
        postgres = (self._postgres_seconds() - self.postgres) / wall
        own = own_seconds() - self.client
        self.shares = {
            "server": server,
            "client": own / wall,
            "postgres": postgres if self.postgres_pid else float("nan"),
            "other": max(0.0, machine - server - own / wall - postgres),
            "idle": max(0.0, CORES - machine),
        }


# --- load -------------------------------------------------------------------------------


@contextlib.asynccontextmanager
async def aiohttp_client(base_url: str, connections: int) -> AsyncIterator[Post]:
    connector = aiohttp.TCPConnector(limit=connections, limit_per_host=connections)
    timeout = aiohttp.ClientTimeout(total=60)
    async with aiohttp.ClientSession(base_url, connector=connector, timeout=timeout) as session:

        async def post(path: str, body: bytes, headers: dict[str, str]) -> tuple[int, bytes]:
            async with session.post(path, data=body, headers=headers) as response:
                return response.status, await response.read()

        yield post


@contextlib.asynccontextmanager
async def httpx_client(base_url: str, connections: int) -> AsyncIterator[Post]:
    limits = httpx.Limits(max_connections=connections, max_keepalive_connections=connections)
    async with httpx.AsyncClient(base_url=base_url, limits=limits, timeout=60) as client:

        async def post(path: str, body: bytes, headers: dict[str, str]) -> tuple[int, bytes]:
            response = await client.post(path, content=body, headers=headers)
            return response.status_code, response.content

        yield post


CLIENTS = {"aiohttp": aiohttp_client, "httpx": httpx_client}
"""aiohttp by default: measured on the 2-core machine this was written on, it cost the client
about 0.2 ms of CPU per checkout, httpx about 4 ms (it saturated a core at ~220/s)."""


class Load:
    """One contestant's requests: its workload's baskets in turn, the customers' tokens in
    turn, a new Idempotency-Key each."""

    def __init__(self, contestant: Contestant, plan: Plan) -> None:
        self.path = contestant.path
        self.prefix = f"{contestant.key}-{os.getpid()}"
        self.bodies = contestant.workload.bodies
        self.authorizations = [f"Bearer {token}" for token in plan.tokens]
        self.sent = 0

    def next_request(self) -> tuple[str, bytes, dict[str, str]]:
        n = self.sent
        self.sent += 1
        return (
            self.path,
            self.bodies[n % len(self.bodies)],
            {
                "Authorization": self.authorizations[n % len(self.authorizations)],
                "Content-Type": "application/json",
                "Idempotency-Key": f"{self.prefix}-{n}",
            },
        )

    async def closed_loop(
        self, post: Post, connections: int, seconds: float, figures: Figures
    ) -> None:
        """``connections`` workers, each sending its next checkout as soon as the last one
        is answered."""
        deadline = time.perf_counter() + seconds

        async def worker() -> None:
            while time.perf_counter() < deadline:
                request = self.next_request()
                started = time.perf_counter()
                try:
                    status, answer = await post(*request)
                except Exception as error:  # counted, never fatal
                    figures.errors[f"{type(error).__name__}: {error}"[:120]] += 1
                    continue
                if status == 201:
                    figures.latencies.append((time.perf_counter() - started) * 1000)
                else:
                    figures.errors[f"{status} {answer[:100]!r}"] += 1

        started = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(connections)))
        figures.seconds = time.perf_counter() - started

    def sender(self, post: Post) -> Send:
        """One checkout at a time, for the open loop."""

        async def send() -> str | None:
            status, answer = await post(*self.next_request())
            return None if status == 201 else f"{status} {answer[:100]!r}"

        return send


def shape(value: object) -> object:
    """A JSON document's structure: its keys and the types of its values."""
    if isinstance(value, dict):
        return {key: shape(item) for key, item in sorted(value.items())}
    if isinstance(value, list):
        return [shape(value[0])] if value else []
    return type(value).__name__


@dataclass
class Written:
    """What a server's database holds after the run, against what the server answered."""

    orders_while_measured: int
    answered_201: int
    orders: int
    outbox_rows: int


async def database_counts(url: str) -> tuple[int, int]:
    """Orders and outbox rows in the database."""
    connection = await asyncpg.connect(url)
    try:
        orders = await connection.fetchval("SELECT count(*) FROM orders")
        rows = await connection.fetchval("SELECT count(*) FROM outbox")
        return int(orders), int(rows)
    finally:
        await connection.close()


async def drive(contestants: list[Contestant], plan: Plan) -> dict[str, Written]:
    """Warm every contestant up, then measure them in turns, round after round (the
    machine's speed drifts over minutes, other tenants, and alternating short rounds lets
    every contestant see the same drift): saturation first, then each offered rate."""
    servers = {c.server.name: c.server for c in contestants}
    async with contextlib.AsyncExitStack() as clients:
        closed: dict[str, Post] = {}
        opened: dict[str, Post] = {}
        for name, server in servers.items():
            base_url = f"http://127.0.0.1:{server.port}"
            client = CLIENTS[plan.client]
            closed[name] = await clients.enter_async_context(client(base_url, plan.connections))
            opened[name] = await clients.enter_async_context(
                client(base_url, plan.open_connections)
            )
        loads = {c.key: Load(c, plan) for c in contestants}
        for contestant in contestants:
            post, load = closed[contestant.server.name], loads[contestant.key]
            status, answer = await post(*load.next_request())
            if status != 201:
                raise SystemExit(f"{contestant.label} answered {status}: {answer[:300]!r}")
            contestant.figures.shape = shape(json.loads(answer))
            await load.closed_loop(post, plan.connections, plan.warmup, Figures())
        before = {name: (await database_counts(s.database))[0] for name, s in servers.items()}
        for _ in range(plan.rounds):
            for contestant in contestants:
                await measure_round(contestant, loads[contestant.key], closed, plan)
        at_rates = [c for c in contestants if c.workload.name == "spread"]
        # A fraction is of the baseline's saturation figure (or the only server's).
        reference = at_rates[0].figures.rate if at_rates else 0.0
        for rate in plan.rates if at_rates else []:
            per_second = rate.per_second(reference)
            for _ in range(plan.rounds):
                for contestant in at_rates:
                    send = loads[contestant.key].sender(opened[contestant.server.name])
                    figures = await open_loop(
                        send,
                        rate=per_second,
                        seconds=plan.seconds,
                        connections=plan.open_connections,
                        late_ms=LATE_MS,
                    )
                    contestant.offered.setdefault(
                        rate.text, OpenLoopFigures(rate=per_second, seconds=0)
                    ).add(figures)
    written = {}
    for name, server in servers.items():
        orders, rows = await database_counts(server.database)
        answered = sum(
            len(c.figures.latencies) + sum(len(o.latencies_ms) for o in c.offered.values())
            for c in contestants
            if c.server.name == name
        )
        written[name] = Written(orders - before[name], answered, orders, rows)
    return written


async def measure_round(
    contestant: Contestant, load: Load, posts: dict[str, Post], plan: Plan
) -> None:
    figures = Figures()
    pid = contestant.server.pid
    assert pid is not None, "measured once started"
    if contestant.profiled:
        os.kill(pid, signal.SIGUSR1)
    with CpuMeter(pid, plan.postgres_pid) as meter:
        post = posts[contestant.server.name]
        await load.closed_loop(post, plan.connections, plan.seconds, figures)
    if contestant.profiled:
        os.kill(pid, signal.SIGUSR2)
    contestant.figures.add_round(figures, meter.shares)


# --- servers ----------------------------------------------------------------------------


@contextlib.contextmanager
def latency_proxy(database_url: str, round_trip_ms: float, workdir: Path) -> Iterator[int]:
    """A proxy in front of ``database_url``'s server that delays each round trip by
    ``round_trip_ms``; its port."""
    port = free_port()
    target = urlsplit(database_url)
    proxy = ManagedProcess(
        "latency-proxy",
        [
            sys.executable,
            str(HERE / "latency_proxy.py"),
            str(port),
            target.hostname or "127.0.0.1",
            str(target.port or 5432),
            str(round_trip_ms),
        ],
        workdir / "latency-proxy.log",
    )
    try:
        proxy.start()
        proxy.wait_until(lambda: port_accepts("127.0.0.1", port), 30, "accepting connections")
        yield port
    finally:
        proxy.stop()


def through(url: str, port: int | None) -> str:
    """``url`` by way of the local ``port`` (the latency proxy), or as it is."""
    if port is None:
        return url
    parts = urlsplit(url)
    credentials, at, _ = parts.netloc.rpartition("@")
    return urlunsplit(parts._replace(netloc=f"{credentials}{at}127.0.0.1:{port}"))


async def round_trip_ms(url: str, times: int = 200) -> float:
    """The median time of a ``SELECT 1`` on one connection to ``url``, in milliseconds."""
    connection = await asyncpg.connect(url)
    try:
        took = []
        for _ in range(times):
            started = time.perf_counter()
            await connection.fetchval("SELECT 1")
            took.append((time.perf_counter() - started) * 1000)
    finally:
        await connection.close()
    return statistics.median(took)


def servers(
    service_url: str,
    baseline_url: str,
    pool: int,
    profile: str | None,
    proxy: int | None = None,
) -> list[Server]:
    """The two servers; ``proxy``: the port they reach PostgreSQL through, if not directly."""
    python = sys.executable
    baseline_port, service_port = free_port(), free_port()
    service = [str(HERE / "profiled_service.py")] if profile else ["-m", "shop.order.api"]
    return [
        Server(
            "baseline",
            "bare FastAPI + asyncpg",
            [
                python, "-m", "uvicorn", "baseline_app:app",
                "--app-dir", str(HERE),
                "--host", "127.0.0.1", "--port", str(baseline_port),
                "--log-level", "warning", "--timeout-graceful-shutdown", "20",
            ],
            {
                "BASELINE_DATABASE_URL": through(baseline_url, proxy),
                "BASELINE_JWT_SECRET": JWT_SECRET,
                "BASELINE_POOL_SIZE": str(pool),
            },
            baseline_url,
            baseline_port,
        ),
        Server(
            "service",
            "order-service",
            [python, *service],
            {
                "SHOP_ORDER_DATABASE_URL": through(service_url, proxy),
                "SHOP_ORDER_JWT_SECRET": JWT_SECRET,
                "SHOP_ORDER_HOST": "127.0.0.1",
                "SHOP_ORDER_PORT": str(service_port),
                "SHOP_ORDER_LOG_JSON": "false",
                "SHOP_ORDER_ENVIRONMENT": "test",
                "SHOP_ORDER_DB_POOL_SIZE": str(pool),
                "BENCH_PROFILE": profile or "",
            },
            service_url,
            service_port,
            profiled=bool(profile),
        ),
    ]  # fmt: skip


def contestants_of(
    chosen: list[Server], spread: Workload, hot: Workload | None
) -> list[Contestant]:
    """The measurements of the run, in the order they take turns."""
    by_name = {server.name: server for server in chosen}
    baseline, service = by_name.get("baseline"), by_name.get("service")
    contestants = []
    if baseline:
        contestants.append(
            Contestant("baseline", "bare FastAPI + asyncpg", baseline, "/v1/orders", spread)
        )
    if service:
        contestants.append(
            Contestant("service", "order-service", service, "/v1/orders", spread, service.profiled)
        )
    if hot and baseline:
        contestants.append(
            Contestant(
                "stock_first_hot",
                "stock-first FastAPI + asyncpg",
                baseline,
                "/stock-first/v1/orders",
                hot,
            )
        )
    if hot and service:
        contestants.append(Contestant("service_hot", "order-service", service, "/v1/orders", hot))
    return contestants


def measure(contestants: list[Contestant], plan: Plan) -> dict[str, Written]:
    """Start the contestants' servers, load them, stop them (by their pids, whatever
    happens)."""
    with contextlib.ExitStack() as stack:
        for server in {c.server.name: c.server for c in contestants}.values():
            process = ManagedProcess(
                server.name,
                server.argv,
                plan.workdir / f"{server.name}.log",
                env={**os.environ, **server.env},
            )
            stack.callback(process.stop, timeout=30)
            process.start()
            accepting = functools.partial(port_accepts, "127.0.0.1", server.port)
            process.wait_until(accepting, 60, "accepting connections")
            server.pid = process.pid
        with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
            return runner.run(drive(contestants, plan))


# --- output -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Comparison:
    """A figure beside its baseline, their ratio, and the goal set for the ratio."""

    name: str
    figure: float
    baseline: float
    at_least: float | None = None
    at_most: float | None = None

    @property
    def ratio(self) -> float:
        return self.figure / self.baseline if self.baseline else float("nan")

    @property
    def goal(self) -> str:
        return f">= {self.at_least:.2f}" if self.at_least is not None else f"<= {self.at_most:.2f}"

    @property
    def met(self) -> bool:
        if self.at_least is not None:
            return self.ratio >= self.at_least
        return self.at_most is not None and self.ratio <= self.at_most


def comparisons(by_key: dict[str, Contestant], rates: list[Rate]) -> list[Comparison]:
    found = []
    baseline, service = by_key.get("baseline"), by_key.get("service")
    stock_first, hot = by_key.get("stock_first_hot"), by_key.get("service_hot")
    if baseline and service:
        found.append(
            Comparison(
                "spread orders/s: service / bare baseline",
                service.figures.rate,
                baseline.figures.rate,
                at_least=0.8,
            )
        )
    if service and hot:
        found.append(
            Comparison(
                "hot orders/s: service hot / service spread",
                hot.figures.rate,
                service.figures.rate,
                at_least=0.8,
            )
        )
    if stock_first and hot:
        found.append(
            Comparison(
                "hot orders/s: service / stock-first baseline",
                hot.figures.rate,
                stock_first.figures.rate,
                at_least=3.0,
            )
        )
    for rate in rates:
        if baseline and service and rate.text in service.offered:
            offered = service.offered[rate.text]
            found.append(
                Comparison(
                    f"p99 ms at {rate.text} ({offered.rate:,.0f}/s): service / bare baseline",
                    offered.percentile(0.99),
                    baseline.offered[rate.text].percentile(0.99),
                    at_most=1.2,
                )
            )
    return found


def problems_of(contestants: list[Contestant], written: dict[str, Written]) -> list[str]:
    """Whatever makes a figure doubtful, one line each."""
    found = []
    for contestant in contestants:
        for error, times in contestant.figures.errors.most_common(5):
            found.append(f"{contestant.key}: {times} x {error}")
        for text, offered in contestant.offered.items():
            for error, times in offered.failed.most_common(5):
                found.append(f"{contestant.key} at {text}: {times} x {error}")
            # In the table whatever they are; doubtful once a request went unsent (its
            # latency is missing from the figures) or the client was often behind.
            if offered.not_sent or offered.late > offered.due / 100:
                found.append(
                    f"{contestant.key} at {text}: of {offered.due} due, {offered.not_sent} not "
                    f"sent (every connection waiting), {offered.late} sent more than "
                    f"{LATE_MS:g} ms late (the client fell behind)"
                )
    for name, counts in written.items():
        if counts.orders_while_measured != counts.answered_201:
            found.append(
                f"{name}: {counts.orders_while_measured} orders written while measured for "
                f"{counts.answered_201} answers of 201"
            )
        if counts.outbox_rows != OUTBOX_ROWS_PER_ORDER * counts.orders:
            found.append(
                f"{name}: {counts.outbox_rows} outbox rows for {counts.orders} orders, "
                f"{OUTBOX_ROWS_PER_ORDER} expected each"
            )
    shapes = {c.key: c.figures.shape for c in contestants}
    if len({json.dumps(s, sort_keys=True) for s in shapes.values()}) > 1:
        found.append(f"the answers differ in shape: {shapes}")
    return found


def report(
    args: argparse.Namespace,
    contestants: list[Contestant],
    written: dict[str, Written],
    rates: list[Rate],
    round_trips: tuple[float, float] | None = None,
) -> tuple[list[Comparison], list[str]]:
    """Print every figure; ``round_trips``: a ``SELECT 1``'s median ms, directly and
    through the latency proxy, when there is one."""
    hot = any(c.workload.name == "hot" for c in contestants)
    print(
        f"POST /v1/orders: {args.connections} connections; {args.rounds} rounds of "
        f"{args.seconds:g} s per measurement, in turns, after {args.warmup:g} s of warm-up "
        f"each; spread: baskets of 1-3 lines over {args.products} products"
        + (f"; hot: the same baskets, each with {HOT_SKU} as its first line" if hot else "")
    )
    print(
        f"load generator: {args.client} on uvloop, in this process"
        + (" (it costs the client less CPU than httpx)" if args.client == "aiohttp" else "")
    )
    if round_trips is not None:
        direct, proxied = round_trips
        print(
            f"database round trip: {args.db_round_trip_ms:g} ms added for both servers "
            f"(latency_proxy.py), as across a network; a SELECT 1 took {proxied:.2f} ms "
            f"through it, {direct:.2f} ms directly (medians)"
        )
    print("saturation (closed loop)")
    print(f"  {'':8}{'':30}{'orders/s':>9}{'p50 ms':>9}{'p99 ms':>9}{'max ms':>9}{'errors':>8}")
    for c in contestants:
        f = c.figures
        print(
            f"  {c.workload.name:8}{c.label:30}{f.rate:9,.0f}{f.percentile(0.5):9.1f}"
            f"{f.percentile(0.99):9.1f}{f.percentile(1.0):9.1f}{sum(f.errors.values()):8d}"
        )
    by_key = {c.key: c for c in contestants}
    pairs = [
        ("spread (baseline, service)", "baseline", "service"),
        ("hot (stock-first, service)", "stock_first_hot", "service_hot"),
        ("service (spread, hot)", "service", "service_hot"),
    ]
    for title, first, second in pairs:
        if first in by_key and second in by_key:
            rounds = zip(
                by_key[first].figures.round_rates, by_key[second].figures.round_rates, strict=True
            )
            print(
                f"  by round, {title}: "
                + "; ".join(f"{a:,.0f}, {b:,.0f}, {b / a:.2f}" for a, b in rounds if a)
            )
    if "baseline" in by_key and by_key["baseline"].figures.rate:
        saturated = by_key["baseline"].figures.rate
        # Little's law: with every connection always waiting, the mean latency is
        # connections / throughput, whatever the server does.
        print(
            f"  at {args.connections} connections, {saturated:,.0f} orders/s means a mean "
            f"latency of {args.connections / saturated * 1000:.0f} ms for the baseline"
        )
    offered = [c for c in contestants if c.offered]
    if offered:
        print(
            f"latency at an offered rate (open loop, spread baskets, evenly spaced, from each "
            f"request's scheduled time; at most {args.open_connections} waiting; a % is of "
            f"the baseline's saturation figure)"
        )
        print(
            f"  {'':18}{'':24}{'orders/s':>9}{'p50 ms':>9}{'p99 ms':>9}{'max ms':>9}"
            f"{'failed':>8}{'late':>6}{'unsent':>8}"
        )
        for rate in rates:
            for c in offered:
                o = c.offered[rate.text]
                where = f"{rate.text} = {o.rate:,.0f}/s" if rate.relative else f"{o.rate:,.0f}/s"
                print(
                    f"  {where:18}{c.label:24}{o.answered_per_second:9,.0f}"
                    f"{o.percentile(0.5):9.1f}{o.percentile(0.99):9.1f}{o.percentile(1.0):9.1f}"
                    f"{sum(o.failed.values()):8d}{o.late:6d}{o.not_sent:8d}"
                )
    print(f"CPU while saturated, % of one core ({CORES} cores: {100 * CORES}%)")
    columns = f"{'server':>8}{'ms/order':>10}{'client':>8}{'postgres':>10}{'other':>7}{'idle':>6}"
    print(f"  {'':8}{'':30}{columns}")
    for c in contestants:
        cpu, orders_per_second = c.figures.cpu, c.figures.rate
        per_order = cpu["server"] * 1000 / orders_per_second if orders_per_second else math.nan
        # PostgreSQL's share is unknown (NaN, and counted in other) when it is not ours.
        ours = f"{'n/a':>10}" if math.isnan(cpu["postgres"]) else f"{cpu['postgres']:10.0%}"
        print(
            f"  {c.workload.name:8}{c.label:30}{cpu['server']:8.0%}{per_order:10.2f}"
            f"{cpu['client']:8.0%}{ours}{cpu['other']:7.0%}{cpu['idle']:6.0%}"
        )
    print("database after the run")
    for name, counts in written.items():
        print(
            f"  {name}: {counts.orders:,} orders, {counts.outbox_rows:,} outbox rows "
            f"({OUTBOX_ROWS_PER_ORDER} expected per order: OrderCreated); "
            f"{counts.orders_while_measured:,} orders written while measured, "
            f"{counts.answered_201:,} answers of 201"
        )
    compared = comparisons(by_key, rates)
    problems = problems_of(contestants, written)
    for problem in problems:
        print(f"  !! {problem}")
    print("summary")
    print(f"  {'':58}{'figure':>9}{'baseline':>10}{'ratio':>7}   goal")
    for comparison in compared:
        print(
            f"  {comparison.name:58}{comparison.figure:9,.1f}{comparison.baseline:10,.1f}"
            f"{comparison.ratio:7.2f}   {comparison.goal} "
            f"{'met' if comparison.met else 'MISSED'}"
        )
    print(f"  problems: {len(problems)}" + (" (the !! lines above)" if problems else ""))
    return compared, problems


def _number(value: float) -> float | None:
    """JSON has no NaN."""
    return None if math.isnan(value) else round(value, 3)


def figures_json(
    args: argparse.Namespace,
    contestants: list[Contestant],
    written: dict[str, Written],
    compared: list[Comparison],
    problems: list[str],
    *,
    round_trips: tuple[float, float] | None = None,
) -> dict[str, Any]:
    def closed(c: Contestant) -> dict[str, Any]:
        f = c.figures
        return {
            "label": c.label,
            "workload": c.workload.name,
            "orders_per_second": _number(f.rate),
            "p50_ms": _number(f.percentile(0.5)),
            "p99_ms": _number(f.percentile(0.99)),
            "max_ms": _number(f.percentile(1.0)),
            "errors": sum(f.errors.values()),
            "round_rates": [_number(rate) for rate in f.round_rates],
            "cpu_share": {part: _number(share) for part, share in f.cpu.items()},
        }

    def offered(o: OpenLoopFigures) -> dict[str, Any]:
        return {
            "offered_per_second": _number(o.rate),
            "answered_per_second": _number(o.answered_per_second),
            "p50_ms": _number(o.percentile(0.5)),
            "p99_ms": _number(o.percentile(0.99)),
            "max_ms": _number(o.percentile(1.0)),
            "due": o.due,
            "failed": sum(o.failed.values()),
            "late": o.late,
            "not_sent": o.not_sent,
        }

    return {
        "bench": "checkout",
        "settings": {
            "connections": args.connections,
            "seconds": args.seconds,
            "rounds": args.rounds,
            "warmup": args.warmup,
            "products": args.products,
            "product": args.product,
            "hot_sku": HOT_SKU,
            "rates": args.rate,
            "db_round_trip_ms": args.db_round_trip_ms,
            "select_1_ms": None
            if round_trips is None
            else {"direct": _number(round_trips[0]), "through_proxy": _number(round_trips[1])},
            "open_connections": args.open_connections,
            "late_ms": LATE_MS,
            "client": args.client,
            "cores": CORES,
        },
        "saturation": {c.key: closed(c) for c in contestants},
        "offered": {
            c.key: {text: offered(o) for text, o in c.offered.items()}
            for c in contestants
            if c.offered
        },
        "database": {
            name: {
                "orders": w.orders,
                "outbox_rows": w.outbox_rows,
                "outbox_rows_expected_per_order": OUTBOX_ROWS_PER_ORDER,
                "orders_while_measured": w.orders_while_measured,
                "answered_201": w.answered_201,
            }
            for name, w in written.items()
        },
        "comparisons": [
            {
                "name": c.name,
                "figure": _number(c.figure),
                "baseline": _number(c.baseline),
                "ratio": _number(c.ratio),
                "goal": c.goal,
                "met": c.met,
            }
            for c in compared
        ],
        "problems": problems,
    }


def parse_rates(text: str) -> list[Rate]:
    """``50%,80%`` (fractions of the baseline's saturation figure) or ``100,150``
    (requests/s), or both mixed; ``off`` for none."""
    if text.strip().lower() in {"", "off", "none"}:
        return []
    rates = []
    for part in text.split(","):
        item = part.strip()
        try:
            if item.endswith("%"):
                rate = Rate(item, float(item[:-1]) / 100, relative=True)
            else:
                rate = Rate(item, float(item), relative=False)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a rate: {item!r} (say 50% or 120)") from None
        if rate.value <= 0:
            raise argparse.ArgumentTypeError(f"a rate must be positive, not {item!r}")
        rates.append(rate)
    return rates


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--seconds",
        type=float,
        default=5.0,
        help="measured per server and workload in each round, and at each rate",
    )
    parser.add_argument(
        "--rounds", type=int, default=3, help="the measurements take turns, this often"
    )
    parser.add_argument("--warmup", type=float, default=3.0, help="not measured, per measurement")
    parser.add_argument("--connections", type=int, default=32)
    parser.add_argument("--pool", type=int, default=32, help="database connections per server")
    parser.add_argument(
        "--products",
        type=int,
        default=1000,
        help="catalogue size of the spread baskets (the 12 development products, then "
        "made-up ones); with few, concurrent checkouts queue on the same rows' locks",
    )
    parser.add_argument(
        "--product",
        choices=["spread", "hot"],
        default="hot",
        help="spread: baskets over the catalogue only; hot (the default): also every "
        f"checkout one {HOT_SKU}, for the service and the stock-first baseline",
    )
    parser.add_argument(
        "--rate",
        type=parse_rates,
        default=parse_rates("50%,80%"),
        metavar="RATES",
        help="offered rates of the open loop, comma-separated: 50%% (of the baseline's "
        "saturation figure, measured first) or 120 (requests/s); off for none "
        "(default: 50%%,80%%)",
    )
    parser.add_argument(
        "--open-connections",
        type=int,
        default=128,
        help="open loop: at most this many requests waiting for answers; one due when all "
        "wait is counted, not sent",
    )
    parser.add_argument(
        "--db-round-trip-ms",
        type=float,
        default=0.0,
        help="the servers reach PostgreSQL through a proxy that adds this to every round trip "
        "(latency_proxy.py), as a database across a network does; 0: directly (default)",
    )
    parser.add_argument("--client", choices=sorted(CLIENTS), default="aiohttp")
    parser.add_argument("--only", choices=["baseline", "service"], help="measure one server")
    parser.add_argument(
        "--profile",
        metavar="FILE",
        help="cProfile order-service during its measured seconds of spread baskets; pstats to FILE",
    )
    parser.add_argument("--json", metavar="PATH", help="also write the figures there, as JSON")
    args = parser.parse_args()
    rates: list[Rate] = args.rate
    args.rate = ",".join(rate.text for rate in rates) or "off"
    args.products = max(3, args.products)
    products = catalogue(args.products)
    profile = str(Path(args.profile).resolve()) if args.profile else None
    spread = Workload("spread", baskets(BASKETS, [sku for sku, *_ in products]))
    hot = Workload("hot", with_the_hot_product(spread.bodies))
    with (
        tempfile.TemporaryDirectory(prefix="bench-checkout-") as workdir,
        postgres(Path(workdir)) as (service_url, baseline_url, postgres_pid),
        contextlib.ExitStack() as proxies,
    ):
        for url in (service_url, baseline_url):
            migrate(url)
            asyncio.run(seed(url, products))
        proxy = (
            proxies.enter_context(latency_proxy(service_url, args.db_round_trip_ms, Path(workdir)))
            if args.db_round_trip_ms > 0
            else None
        )
        round_trips = (
            None
            if proxy is None
            else (
                asyncio.run(round_trip_ms(baseline_url)),
                asyncio.run(round_trip_ms(through(baseline_url, proxy))),
            )
        )
        plan = Plan(
            seconds=args.seconds,
            rounds=args.rounds,
            warmup=args.warmup,
            connections=args.connections,
            open_connections=args.open_connections,
            client=args.client,
            rates=rates,
            tokens=customer_tokens(),
            postgres_pid=postgres_pid,
            workdir=Path(workdir),
        )
        chosen = [
            server
            for server in servers(service_url, baseline_url, args.pool, profile, proxy)
            if args.only in (None, server.name)
        ]
        contestants = contestants_of(chosen, spread, hot if args.product == "hot" else None)
        written = measure(contestants, plan)
    compared, problems = report(args, contestants, written, rates, round_trips)
    if profile:
        print(f"  cProfile of order-service's measured seconds: {profile} (python -m pstats)")
    if args.json:
        document = figures_json(
            args, contestants, written, compared, problems, round_trips=round_trips
        )
        Path(args.json).write_text(json.dumps(document, indent=2) + "\n")
        print(f"  figures as JSON: {args.json}")


if __name__ == "__main__":
    main()
