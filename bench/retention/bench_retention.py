"""Outbox retention: how big the outbox table gets while rows are written at a sustained
rate and relayed, with the relay's retention cleanup next to the cleanup it replaced, in the
same run. Run: ``make bench-retention``.

Two outboxes, each in a database of its own on the same PostgreSQL, are written at the same
time at ``--rate`` rows/s for ``--seconds`` s: OrderCreated rows, ``ROWS_A_STATEMENT`` a
statement, by the checkout's own writer (``add_on_connection``: the rows and a NOTIFY in one
statement; the table grows by rows, whatever the transactions). Each is published by the
real ``Relay`` over the memory transport: the table's size is the point, not the broker.
Sent rows are kept ``--retention`` s.

- cleanup: the relay's own retention cleanup, a round every ``--interval`` s, in batches.
- baseline: the cleanup it replaced (``old_cleanup`` below): one statement every 60 s that
  deletes at most 10,000 rows, the first as the writing starts. It ran on the relay's
  connection, between batches; here it runs on a connection of its own, which changes
  nothing about what it deletes. Its relay keeps every row for it to delete (a retention
  longer than any run). The last sample is taken after its last round due in the run.

Every ``--sample-every`` s, each table's rows, unsent rows, ``pg_total_relation_size`` (heap,
indexes and TOAST) and how often autovacuum has vacuumed it are printed; then each series'
maximum. The rows are bounded by about ``rate * (retention + interval)``. The disk size also
holds deleted rows until autovacuum frees their space for reuse, which it does about once an
``autovacuum_naptime``: PostgreSQL's default of a minute would leave a one-minute run
without a single vacuum, so the bench sets ``--autovacuum-naptime`` (10 s) on the server it
embeds (one named by SHOP_DEVSTACK_POSTGRES_URL keeps its own). Both outboxes share it.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import asyncpg
from sqlalchemy.ext.asyncio import create_async_engine

from shop.contracts import OrderCreated, examples, wrap
from shop.devstack.cpu import CORES, machine_ticks
from shop.devstack.parts import postgres_part
from shop.devstack.postgres import PostgresServer
from shop.devstack.settings import DevstackSettings
from shop.messaging import OutboxItem, Relay, RelaySettings, add_on_connection
from shop.messaging.relay import asyncpg_dsn
from shop.messaging.schema import create_tables
from shop.messaging.testing import wait_until
from shop.messaging.transports.memory import MemoryBroker, MemoryTransport

ROWS_A_STATEMENT = 100
KEEP_EVERYTHING = 10.0**9
"""The baseline relay's retention: its own cleanup never deletes, the old one does."""

OLD_CLEANUP_INTERVAL = 60.0
OLD_CLEANUP_LIMIT = 10_000
_OLD_CLEANUP = """
    DELETE FROM outbox WHERE id IN (
        SELECT id FROM outbox
        WHERE published_at IS NOT NULL AND published_at < now() - make_interval(secs => $1)
        LIMIT $2)
"""
_SIZE = """
    SELECT count(*), count(*) FILTER (WHERE published_at IS NULL),
           pg_total_relation_size('outbox'),
           (SELECT autovacuum_count FROM pg_stat_user_tables WHERE relid = 'outbox'::regclass)
    FROM outbox
"""


@dataclass(frozen=True, slots=True)
class Databases:
    cleanup: str
    baseline: str
    autovacuum_naptime: str


@contextlib.contextmanager
def infrastructure(workdir: Path, naptime: float) -> Iterator[Databases]:
    """PostgreSQL (embedded, or the one SHOP_DEVSTACK_POSTGRES_URL names), two databases."""
    settings = DevstackSettings()
    postgres, server = postgres_part(settings, workdir)
    try:
        postgres.spawn()
        postgres.wait_ready()
        embedded = settings.postgres_url is None
        yield asyncio.run(prepare(server, naptime if embedded else None))
    finally:
        postgres.stop()


async def prepare(server: PostgresServer, naptime: float | None) -> Databases:
    """Two databases with an outbox each; the naptime set on a server of the bench's own."""
    connection = await asyncpg.connect(server.url())
    try:
        if naptime is not None:
            await connection.execute(f"ALTER SYSTEM SET autovacuum_naptime = '{naptime:g}s'")
            await connection.execute("SELECT pg_reload_conf()")
            await asyncio.sleep(0.5)  # the configuration is read again in the background
        effective = await connection.fetchval("SHOW autovacuum_naptime")
    finally:
        await connection.close()
    urls = [server.url(await server.create_database(prefix="bench")) for _ in range(2)]
    for url in urls:
        engine = create_async_engine(url.replace("postgresql://", "postgresql+asyncpg://"))
        async with engine.begin() as tables:
            await create_tables(tables)
        await engine.dispose()
    return Databases(urls[0], urls[1], effective)


@dataclass(frozen=True, slots=True)
class Sample:
    at: float
    rows: int
    unsent: int
    bytes: int
    autovacuums: int


@dataclass
class Outbox:
    """One of the two outboxes: its database, its relay and what was measured of it."""

    name: str
    database_url: str
    relay: Relay
    broker: MemoryBroker
    written: int = 0
    samples: list[Sample] = field(default_factory=list)

    def metric(self, name: str) -> float:
        return self.relay.metrics.registry.get_sample_value(name) or 0.0

    async def sample(self, connection: asyncpg.Connection, started: float) -> None:
        rows, unsent, size, autovacuums = await connection.fetchrow(_SIZE)
        at = time.perf_counter() - started
        self.samples.append(Sample(at, rows, unsent, size, autovacuums))
        self.broker.published.clear()  # counted by the relay's metrics; memory stays flat


@dataclass(frozen=True, slots=True)
class OldRound:
    at: float
    deleted: int


async def old_cleanup(
    database_url: str, retention: float, started: float, rounds: list[OldRound]
) -> None:
    """The cleanup as it was: at most 10,000 rows a statement, every 60 s from ``started``."""
    connection = await asyncpg.connect(asyncpg_dsn(database_url))
    try:
        for k in itertools.count():
            await asyncio.sleep(max(0.0, started + k * OLD_CLEANUP_INTERVAL - time.perf_counter()))
            status = await connection.execute(_OLD_CLEANUP, retention, OLD_CLEANUP_LIMIT)
            rounds.append(OldRound(time.perf_counter() - started, int(status.split()[-1])))
    finally:
        await connection.close()


async def write(outbox: Outbox, rate: float, seconds: float, started: float) -> None:
    """Statement ``i`` at ``started + i * ROWS_A_STATEMENT / rate``, as long as ``seconds``
    allows; late statements catch up at once, so the rate holds on average."""
    event = examples.examples()[OrderCreated]
    statements = int(rate * seconds / ROWS_A_STATEMENT)
    connection = await asyncpg.connect(asyncpg_dsn(outbox.database_url))
    try:
        for i in range(statements):
            await asyncio.sleep(
                max(0.0, started + i * ROWS_A_STATEMENT / rate - time.perf_counter())
            )
            items = [
                OutboxItem(wrap(event, key=f"order-{(i * ROWS_A_STATEMENT + n) % 1000}"))
                for n in range(ROWS_A_STATEMENT)
            ]
            await add_on_connection(connection, *items)
            outbox.written += ROWS_A_STATEMENT
    finally:
        await connection.close()


async def sample_until(
    outboxes: list[Outbox], done: asyncio.Event, every: float, started: float
) -> None:
    """A sample of each outbox at ``started``, then every ``every`` s, and once ``done``."""
    connections = [await asyncpg.connect(asyncpg_dsn(o.database_url)) for o in outboxes]
    try:
        for k in itertools.count(1):
            for outbox, connection in zip(outboxes, connections, strict=True):
                await outbox.sample(connection, started)
            if done.is_set():
                return
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(done.wait(), started + k * every - time.perf_counter())
    finally:
        for connection in connections:
            await connection.close()


@dataclass(frozen=True, slots=True)
class Run:
    cleanup: Outbox
    baseline: Outbox
    old_rounds: list[OldRound]
    seconds: float
    """From the first statement to the last, of both writers."""
    machine_busy: float
    """Cores busy on average meanwhile (of CORES), everything on the machine counted."""


async def measure(databases: Databases, arguments: argparse.Namespace) -> Run:
    retention = arguments.retention
    cleanup = Outbox(
        "cleanup",
        databases.cleanup,
        *relay_over_memory(
            databases.cleanup,
            RelaySettings(retention_seconds=retention, cleanup_interval=arguments.interval),
        ),
    )
    baseline = Outbox(
        "baseline",
        databases.baseline,
        *relay_over_memory(databases.baseline, RelaySettings(retention_seconds=KEEP_EVERYTHING)),
    )
    outboxes = [cleanup, baseline]
    relaying = [asyncio.create_task(o.relay.run()) for o in outboxes]
    await wait_until(lambda: all(o.relay.is_leader for o in outboxes), what="the relays to lead")
    old_rounds: list[OldRound] = []
    done = asyncio.Event()
    busy_before, total_before = machine_ticks()
    started = time.perf_counter()
    old = asyncio.create_task(old_cleanup(baseline.database_url, retention, started, old_rounds))
    sampling = asyncio.create_task(sample_until(outboxes, done, arguments.sample_every, started))
    await asyncio.gather(*(write(o, arguments.rate, arguments.seconds, started) for o in outboxes))
    elapsed = time.perf_counter() - started
    busy, total = machine_ticks()
    due = int(arguments.seconds // OLD_CLEANUP_INTERVAL) + 1
    await wait_until(lambda: len(old_rounds) >= due, within=60, what="the old cleanup's round")
    done.set()
    await sampling
    old.cancel()
    await asyncio.wait([old])
    for outbox in outboxes:
        outbox.relay.stop()
    await asyncio.gather(*relaying)
    machine = (busy - busy_before) / max(1, total - total_before) * CORES
    return Run(cleanup, baseline, old_rounds, elapsed, machine)


def relay_over_memory(database_url: str, settings: RelaySettings) -> tuple[Relay, MemoryBroker]:
    broker = MemoryBroker()
    return Relay(database_url, MemoryTransport(broker), settings=settings), broker


def report(run: Run, databases: Databases, arguments: argparse.Namespace) -> None:
    cleanup, baseline = run.cleanup, run.baseline
    print(
        f"outbox table, {arguments.rate:,.0f} rows/s offered for {arguments.seconds:g} s,"
        f" retention {arguments.retention:g} s, memory transport,"
        f" autovacuum_naptime {databases.autovacuum_naptime}"
    )
    print(
        f"  cleanup : the relay's, a round every {arguments.interval:g} s,"
        f" batches of {cleanup.relay.settings.cleanup_batch_size:,}"
    )
    print(
        f"  baseline: the old one, at most {OLD_CLEANUP_LIMIT:,} rows"
        f" every {OLD_CLEANUP_INTERVAL:g} s; its rounds: "
        + ", ".join(f"t={r.at:.1f} s deleted {r.deleted:,}" for r in run.old_rounds)
    )
    print(
        f"  written in {run.seconds:.1f} s: "
        + ", ".join(f"{o.name} {o.written:,} rows" for o in (cleanup, baseline))
        + f"; machine busy {run.machine_busy:.2f} of {CORES} cores"
    )
    print()
    heading = f"{'rows':>9} {'unsent':>7} {'MB':>7} {'vacuumed':>8}"
    print(f"  {'t (s)':>6} | {'cleanup':^34} | {'baseline':^34}")
    print(f"  {'':>6} | {heading} | {heading}")
    for ours, theirs in zip(cleanup.samples, baseline.samples, strict=True):
        print(f"  {ours.at:6.1f} | {columns(ours)} | {columns(theirs)}")
    print()
    bound = arguments.rate * (arguments.retention + arguments.interval)
    rows = max_rows(cleanup), max_rows(baseline)
    print(
        f"  max rows : cleanup {rows[0]:9,}   baseline {rows[1]:9,}"
        f"   baseline/cleanup {rows[1] / max(1, rows[0]):5.1f}"
        f"   (rate x (retention + interval) = {bound:,.0f})"
    )
    mb = max_mb(cleanup), max_mb(baseline)
    print(
        f"  max MB   : cleanup {mb[0]:9.1f}   baseline {mb[1]:9.1f}"
        f"   baseline/cleanup {mb[1] / max(0.001, mb[0]):5.1f}"
    )
    for outbox in (cleanup, baseline):
        published = outbox.metric("messaging_relay_published_total")
        deleted = outbox.metric("messaging_relay_cleanup_deleted_total")
        print(
            f"  {outbox.name:<8} : published {published:,.0f},"
            f" deleted by its relay's cleanup {deleted:,.0f},"
            f" most unsent at a sample {max(s.unsent for s in outbox.samples):,}"
        )


def columns(sample: Sample) -> str:
    return f"{sample.rows:9,} {sample.unsent:7,} {sample.bytes / 1e6:7.1f} {sample.autovacuums:8}"


def max_rows(outbox: Outbox) -> int:
    return max(s.rows for s in outbox.samples)


def max_mb(outbox: Outbox) -> float:
    return max(s.bytes for s in outbox.samples) / 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rate", type=float, default=2000.0, help="rows/s written")
    parser.add_argument("--seconds", type=float, default=60.0, help="how long they are written")
    parser.add_argument("--retention", type=float, default=5.0, help="seconds sent rows are kept")
    parser.add_argument("--interval", type=float, default=5.0, help="between cleanup rounds")
    parser.add_argument("--sample-every", type=float, default=5.0, help="seconds")
    parser.add_argument(
        "--autovacuum-naptime", type=float, default=10.0, help="seconds, embedded server only"
    )
    arguments = parser.parse_args()
    with (
        tempfile.TemporaryDirectory(prefix="bench-retention-") as workdir,
        infrastructure(Path(workdir), arguments.autovacuum_naptime) as databases,
    ):
        report(asyncio.run(measure(databases, arguments)), databases, arguments)


if __name__ == "__main__":
    main()
