"""Checkout over HTTP: orders/s and latency of order-service's ``POST /v1/orders`` at 32
concurrent connections, next to a bare FastAPI + raw asyncpg endpoint doing the same SQL work
(``baseline_app.py``), measured in the same run. Run: ``make bench-checkout``.

Both servers run the same way (one uvicorn process each, uvloop and httptools, log level
warning, 32 database connections) on their own database of the same PostgreSQL, migrated by
the service's own migrations and seeded with a catalogue whose stock never runs out. Both get
the same requests: the same baskets in the same order, tokens of the same customers, a new
Idempotency-Key each. Client, servers and PostgreSQL share this machine's cores, so the
output also shows how the CPU was shared while each server was measured.
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
import sys
import tempfile
import time
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path

import aiohttp
import asyncpg
import httpx
import uvloop

from shop.devstack.cpu import CORES, machine_ticks, own_seconds, process_seconds, tree_seconds
from shop.devstack.parts import postgres_part
from shop.devstack.postgres import EmbeddedPostgres
from shop.devstack.process import ManagedProcess, free_port, port_accepts
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

Post = Callable[[bytes, dict[str, str]], Awaitable[tuple[int, bytes]]]
"""Send one checkout (body, headers); its status and body."""


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


@dataclass
class Plan:
    """What every server gets: the same requests, at the same concurrency, for as long."""

    seconds: float
    """Measured per server in each round."""
    rounds: int
    warmup: float
    connections: int
    client: str
    bodies: list[bytes]
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
    orders_written: int = 0
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


async def orders_written(url: str) -> int:
    """Orders in the database; complains if the outbox does not hold one event each."""
    connection = await asyncpg.connect(url)
    try:
        orders = await connection.fetchval("SELECT count(*) FROM orders")
        events = await connection.fetchval("SELECT count(*) FROM outbox")
        if orders != events:
            print(f"  !! {orders} orders but {events} outbox rows", file=sys.stderr)
        return int(orders)
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

    def __enter__(self) -> CpuMeter:
        self.started = time.perf_counter()
        self.machine = machine_ticks()
        self.server = process_seconds(self.server_pid)
        self.postgres = tree_seconds(self.postgres_pid)
        self.client = own_seconds()
        return self

    def __exit__(self, *_: object) -> None:
        wall = time.perf_counter() - self.started
        busy, total = machine_ticks()
        machine = (busy - self.machine[0]) / max(1, total - self.machine[1]) * CORES
        server = (process_seconds(self.server_pid) - self.server) / wall
        postgres = (tree_seconds(self.postgres_pid) - self.postgres) / wall
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

        async def post(body: bytes, headers: dict[str, str]) -> tuple[int, bytes]:
            async with session.post("/v1/orders", data=body, headers=headers) as response:
                return response.status, await response.read()

        yield post


@contextlib.asynccontextmanager
async def httpx_client(base_url: str, connections: int) -> AsyncIterator[Post]:
    limits = httpx.Limits(max_connections=connections, max_keepalive_connections=connections)
    async with httpx.AsyncClient(base_url=base_url, limits=limits, timeout=60) as client:

        async def post(body: bytes, headers: dict[str, str]) -> tuple[int, bytes]:
            response = await client.post("/v1/orders", content=body, headers=headers)
            return response.status_code, response.content

        yield post


CLIENTS = {"aiohttp": aiohttp_client, "httpx": httpx_client}
"""aiohttp by default: measured on the 2-core machine this was written on, it cost the client
about 0.2 ms of CPU per checkout, httpx about 4 ms (it saturated a core at ~220/s)."""


class Load:
    """Workers that each send their next checkout as soon as the last one is answered."""

    def __init__(self, post: Post, prefix: str, plan: Plan) -> None:
        self.post = post
        self.prefix = prefix
        self.bodies = plan.bodies
        self.authorizations = [f"Bearer {token}" for token in plan.tokens]
        self.sent = 0

    def next_request(self) -> tuple[bytes, dict[str, str]]:
        n = self.sent
        self.sent += 1
        return self.bodies[n % len(self.bodies)], {
            "Authorization": self.authorizations[n % len(self.authorizations)],
            "Content-Type": "application/json",
            "Idempotency-Key": f"{self.prefix}-{n}",
        }

    async def run(self, connections: int, seconds: float, figures: Figures) -> None:
        deadline = time.perf_counter() + seconds

        async def worker() -> None:
            while time.perf_counter() < deadline:
                body, headers = self.next_request()
                started = time.perf_counter()
                try:
                    status, answer = await self.post(body, headers)
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


def shape(value: object) -> object:
    """A JSON document's structure: its keys and the types of its values."""
    if isinstance(value, dict):
        return {key: shape(item) for key, item in sorted(value.items())}
    if isinstance(value, list):
        return [shape(value[0])] if value else []
    return type(value).__name__


@dataclass
class Running:
    """A started server under load: its process id, client and figures so far."""

    server: Server
    pid: int
    load: Load
    figures: Figures = field(default_factory=Figures)


async def drive(started: list[tuple[Server, int]], plan: Plan) -> list[tuple[Server, Figures]]:
    """Warm every server up, then measure them in turns, round after round: the machine's
    speed drifts over minutes (other tenants), and alternating short rounds lets both
    servers see the same drift."""
    async with contextlib.AsyncExitStack() as clients:
        running = []
        for server, pid in started:
            base_url = f"http://127.0.0.1:{server.port}"
            post = await clients.enter_async_context(
                CLIENTS[plan.client](base_url, plan.connections)
            )
            load = Load(post, f"{server.name}-{os.getpid()}", plan)
            status, answer = await post(*load.next_request())
            if status != 201:
                raise SystemExit(f"{server.label} answered {status}: {answer[:300]!r}")
            running.append(Running(server, pid, load))
            running[-1].figures.shape = shape(json.loads(answer))
            await load.run(plan.connections, plan.warmup, Figures())
        for one in running:
            one.figures.orders_written = -await orders_written(one.server.database)
        for _ in range(plan.rounds):
            for one in running:
                await measure_round(one, plan)
        for one in running:
            one.figures.orders_written += await orders_written(one.server.database)
    return [(one.server, one.figures) for one in running]


async def measure_round(one: Running, plan: Plan) -> None:
    figures = Figures()
    if one.server.profiled:
        os.kill(one.pid, signal.SIGUSR1)
    with CpuMeter(one.pid, plan.postgres_pid) as meter:
        await one.load.run(plan.connections, plan.seconds, figures)
    if one.server.profiled:
        os.kill(one.pid, signal.SIGUSR2)
    one.figures.add_round(figures, meter.shares)


# --- servers ----------------------------------------------------------------------------


def servers(service_url: str, baseline_url: str, pool: int, profile: str | None) -> list[Server]:
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
                "BASELINE_DATABASE_URL": baseline_url,
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
                "SHOP_ORDER_DATABASE_URL": service_url,
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


def measure(servers: list[Server], plan: Plan) -> list[tuple[Server, Figures]]:
    """Start ``servers``, load them, stop them (by their pids, whatever happens)."""
    with contextlib.ExitStack() as stack:
        started = []
        for server in servers:
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
            assert process.pid is not None
            started.append((server, process.pid))
        with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
            results = runner.run(drive(started, plan))
    return results


# --- output -----------------------------------------------------------------------------


def report(args: argparse.Namespace, results: list[tuple[Server, Figures]]) -> None:
    print(
        f"POST /v1/orders: {args.connections} connections; {args.rounds} rounds of "
        f"{args.seconds:g} s per server, in turns, after {args.warmup:g} s of warm-up; "
        f"baskets of 1-3 lines over {args.products} products"
    )
    print(
        f"load generator: {args.client} on uvloop, in this process"
        + (" (it costs the client less CPU than httpx)" if args.client == "aiohttp" else "")
    )
    print(f"  {'':24}{'orders/s':>9}{'p50 ms':>9}{'p99 ms':>9}{'max ms':>9}{'errors':>8}")
    for server, figures in results:
        print(
            f"  {server.label:24}{figures.rate:9,.0f}{figures.percentile(0.5):9.1f}"
            f"{figures.percentile(0.99):9.1f}{figures.percentile(1.0):9.1f}"
            f"{sum(figures.errors.values()):8d}"
        )
    by_name = {server.name: figures for server, figures in results}
    if len(by_name) == 2:
        baseline, service = by_name["baseline"], by_name["service"]
        ratio = service.rate / baseline.rate if baseline.rate else float("nan")
        p99 = service.percentile(0.99)
        print(
            f"  {'ratio service/baseline':24}{ratio:9.2f}   goals: ratio >= 0.80 "
            f"{'met' if ratio >= 0.8 else 'MISSED'}, service p99 <= 50 ms "
            f"{'met' if p99 <= 50 else 'MISSED'}"
        )
        rounds = zip(baseline.round_rates, service.round_rates, strict=True)
        print(
            "  by round (baseline, service, ratio): "
            + "; ".join(f"{b:,.0f}, {s:,.0f}, {s / b:.2f}" for b, s in rounds if b)
        )
        # Little's law: with every connection always waiting, the mean latency is
        # connections / throughput, whatever the server does.
        print(
            f"  at {args.connections} connections, {baseline.rate:,.0f} orders/s means a mean "
            f"latency of {args.connections / baseline.rate * 1000:.0f} ms for the baseline"
            if baseline.rate
            else ""
        )
    print(f"CPU while measured, % of one core ({CORES} cores: {100 * CORES}%)")
    columns = f"{'server':>8}{'ms/order':>10}{'client':>8}{'postgres':>10}{'other':>7}{'idle':>6}"
    print(f"  {'':24}{columns}")
    for server, figures in results:
        cpu = figures.cpu
        per_order = cpu["server"] * 1000 / figures.rate if figures.rate else float("nan")
        # PostgreSQL's share is unknown (NaN, and counted in other) when it is not ours.
        ours = f"{'n/a':>10}" if math.isnan(cpu["postgres"]) else f"{cpu['postgres']:10.0%}"
        print(
            f"  {server.label:24}{cpu['server']:8.0%}{per_order:10.2f}{cpu['client']:8.0%}"
            f"{ours}{cpu['other']:7.0%}{cpu['idle']:6.0%}"
        )
    for server, figures in results:
        for error, times in figures.errors.most_common(5):
            print(f"  !! {server.name}: {times} x {error}")
        if figures.orders_written != len(figures.latencies):
            print(
                f"  !! {server.name}: {figures.orders_written} orders written for "
                f"{len(figures.latencies)} answers of 201"
            )
    if len(by_name) == 2 and by_name["baseline"].shape != by_name["service"].shape:
        print(f"  !! the answers differ: {by_name['baseline'].shape} vs {by_name['service'].shape}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument(
        "--seconds", type=float, default=5.0, help="measured per server in each round"
    )
    parser.add_argument(
        "--rounds", type=int, default=3, help="the servers are measured in turns, this often"
    )
    parser.add_argument("--warmup", type=float, default=3.0, help="not measured, per server")
    parser.add_argument("--connections", type=int, default=32)
    parser.add_argument("--pool", type=int, default=32, help="database connections per server")
    parser.add_argument(
        "--products",
        type=int,
        default=1000,
        help="catalogue size (the 12 development products, then made-up ones); with few, "
        "concurrent checkouts queue on the same rows' locks",
    )
    parser.add_argument("--client", choices=sorted(CLIENTS), default="aiohttp")
    parser.add_argument("--only", choices=["baseline", "service"], help="measure one server")
    parser.add_argument(
        "--profile",
        metavar="FILE",
        help="cProfile order-service during the measured seconds; pstats to FILE",
    )
    args = parser.parse_args()
    args.products = max(3, args.products)
    products = catalogue(args.products)
    profile = str(Path(args.profile).resolve()) if args.profile else None
    with (
        tempfile.TemporaryDirectory(prefix="bench-checkout-") as workdir,
        postgres(Path(workdir)) as (service_url, baseline_url, postgres_pid),
    ):
        for url in (service_url, baseline_url):
            migrate(url)
            asyncio.run(seed(url, products))
        plan = Plan(
            seconds=args.seconds,
            rounds=args.rounds,
            warmup=args.warmup,
            connections=args.connections,
            client=args.client,
            bodies=baskets(BASKETS, [sku for sku, *_ in products]),
            tokens=customer_tokens(),
            postgres_pid=postgres_pid,
            workdir=Path(workdir),
        )
        chosen = servers(service_url, baseline_url, args.pool, profile)
        results = measure([s for s in chosen if args.only in (None, s.name)], plan)
    report(args, results)
    if profile:
        print(f"cProfile of order-service's measured seconds: {profile} (python -m pstats)")


if __name__ == "__main__":
    main()
