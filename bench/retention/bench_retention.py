"""Retention of every table that grows with traffic: how big each gets while rows are
written at a sustained rate, with the shop's retention cleanups next to what each table had
before, in the same run. Run: ``make bench-retention``.

Two databases on the same PostgreSQL, each with every growing table (the outbox and the
inbox, order-service's idempotency keys, payment-service's notifications,
notification-service's sent e-mails' marks), are written at the same time for
``--seconds`` s, ``ROWS_A_STATEMENT`` rows a statement:

- the outbox at ``--rate`` rows/s: OrderCreated rows by the checkout's own writer
  (``add_on_connection``: the rows and a NOTIFY in one statement), published by the real
  ``Relay`` over the memory transport (the table's size is the point, not the broker);
- every other table at ``--table-rate`` rows/s, its rows shaped as its service writes them
  (an idempotency key with its stored answer, a gateway's notification with a raw body of
  about a kilobyte, processed at once, an inbox row, a sent e-mail's mark).

Rows are kept ``--retention`` s.

- cleanup: the relay's own outbox cleanup, and the workers' ``Retention`` job over the
  other tables with the services' own ``retained_tables``; a round every ``--interval`` s,
  in batches. A notification's row is kept for ever by design: its raw body is what goes.
- baseline: what each table had before. The outbox: the cleanup the relay's replaced
  (``old_cleanup`` below), one statement every 60 s that deletes at most 10,000 rows, the
  first as the writing starts; it ran on the relay's connection, between batches; here it
  runs on a connection of its own, which changes nothing about what it deletes. Its relay
  keeps every row for it to delete (a retention longer than any run). The last sample is
  taken after its last round due in the run. The other tables: no cleanup at all.

Every ``--sample-every`` s, each table's rows (and the outbox's unsent rows, the raw bodies
the notifications still keep), ``pg_total_relation_size`` (heap, indexes and TOAST) and how
often autovacuum has vacuumed it are printed; then each series' maximum, and what each
cleanup cost: its rounds and the time its statements took (the pauses between them left
out). The rows are bounded by about ``rate * (retention + interval)``. The disk size also
holds deleted rows until autovacuum frees their space for reuse, which it does about once an
``autovacuum_naptime``: PostgreSQL's default of a minute would leave a one-minute run
without a single vacuum, so the bench sets ``--autovacuum-naptime`` (10 s) on the server it
embeds (one named by SHOP_DEVSTACK_POSTGRES_URL keeps its own). Both databases share it.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import json
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
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
from shop.messaging.retention import Retention, RetentionSettings, TableRetention
from shop.messaging.schema import metadata as messaging_tables
from shop.messaging.testing import wait_until
from shop.messaging.transports.memory import MemoryBroker, MemoryTransport
from shop.notification.adapters import retention as notification_retention
from shop.notification.adapters.tables import metadata as notification_tables
from shop.notification.settings import NotificationRetentionSettings
from shop.order.adapters import retention as order_retention
from shop.order.adapters.tables import metadata as order_tables
from shop.order.settings import OrderRetentionSettings
from shop.payment.adapters import retention as payment_retention
from shop.payment.adapters.tables import metadata as payment_tables
from shop.payment.settings import PaymentRetentionSettings

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

_ANSWER = json.dumps(
    {
        "id": "0b9c6a52-3f7e-4d6b-9a51-2f1de0c3a6b1",
        "number": "SK-7KQ4-M2XD",
        "status": "pending",
        "total": {"amount": 385000, "currency": "IDR"},
        "items": [
            {"sku": "SERUM-NIA-30", "name": "Niacinamide serum 30 ml", "quantity": 1},
            {"sku": "TONER-HA-100", "name": "Hyaluronic toner 100 ml", "quantity": 2},
        ],
        "created_at": "2026-12-06T03:00:00+00:00",
    }
)
"""An idempotency key's stored answer: a checkout's 201 body."""
_RAW_BODY = json.dumps(
    {
        "transaction_time": "2026-12-06 10:00:00",
        "transaction_status": "settlement",
        "transaction_id": "9aed5972-5b6a-401e-894b-a32c91ed1a3a",
        "status_message": "midtrans payment notification",
        "status_code": "200",
        "signature_key": "f" * 128,
        "settlement_time": "2026-12-06 10:00:05",
        "payment_type": "bank_transfer",
        "order_id": "0b9c6a52-3f7e-4d6b-9a51-2f1de0c3a6b1",
        "merchant_id": "G141532850",
        "gross_amount": "385000.00",
        "fraud_status": "accept",
        "currency": "IDR",
        "va_numbers": [{"va_number": "812785002530231", "bank": "bca"}],
        "customer_details": {
            "first_name": "Ayu",
            "last_name": "Lestari",
            "email": "ayu.lestari@example.com",
            "phone": "+628123456789",
        },
        "item_details": [
            {"id": "SERUM-NIA-30", "price": 185000, "quantity": 1, "name": "Niacinamide serum"},
            {"id": "TONER-HA-100", "price": 100000, "quantity": 2, "name": "Hyaluronic toner"},
        ],
    }
).encode()
"""A gateway's notification as it arrives (about a kilobyte, like Midtrans')."""

_WRITES = {
    "inbox": (
        "INSERT INTO inbox (consumer, event_id, message_type)"
        " SELECT 'payment-service', gen_random_uuid(), 'order.created'"
        " FROM generate_series(1, $1)",
        (),
    ),
    "idempotency_keys": (
        "INSERT INTO idempotency_keys (customer_id, key, request_hash, response_status,"
        " response_body)"
        " SELECT 'cust-' || i % 5000, gen_random_uuid()::text, md5(i::text) || md5(''), 201, $2"
        " FROM generate_series(1, $1) AS i",
        (_ANSWER,),
    ),
    "payment_events": (
        "INSERT INTO payment_events (provider, provider_event_id, type, raw_body, meaning,"
        " order_id, amount, currency, provider_payment_id, processed_at, outcome)"
        " SELECT 'midtrans', gen_random_uuid()::text, 'settlement', $2, 'paid',"
        " gen_random_uuid(), 385000, 'IDR', gen_random_uuid()::text, now(), 'paid'"
        " FROM generate_series(1, $1)",
        (_RAW_BODY,),
    ),
    "order_notifications": (
        "INSERT INTO order_notifications (order_id, kind, recipient, message_id, event_id)"
        " SELECT gen_random_uuid(), 'order_confirmation', 'customer' || i || '@example.com',"
        " '<' || gen_random_uuid() || '@skincare-shop.example>', gen_random_uuid()"
        " FROM generate_series(1, $1) AS i",
        (),
    ),
}
"""Each table's rows as its service writes them: ``$1`` rows a statement."""
TABLES = ["outbox", *_WRITES]
_KEPT_BODIES = "SELECT count(*) FROM payment_events WHERE raw_body IS NOT NULL"
_CLEANUP_OF = {"payment_events": "payment_events.raw_body"}
"""The name of each table's cleanup (its metrics' label), where it is not the table's."""


def retained_tables(retention: float) -> list[TableRetention]:
    """The services' own cleanups, every table kept ``retention`` s: their settings made
    without validation, since the settings refuse anything under a day (which is the point
    of the settings, not of a bench)."""
    kept = timedelta(seconds=retention)
    tables = [
        *order_retention.retained_tables(
            OrderRetentionSettings.model_construct(inbox=kept, idempotency_keys=kept)
        ),
        *payment_retention.retained_tables(
            PaymentRetentionSettings.model_construct(inbox=kept, raw_bodies=kept)
        ),
        *notification_retention.retained_tables(
            NotificationRetentionSettings.model_construct(sent_emails=kept)
        ),
    ]
    # One database holds them all here: its inbox is cleaned once.
    return list({table.name: table for table in tables}.values())


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
    """Two databases with every growing table each (and the tables their rows refer to);
    the naptime set on a server of the bench's own."""
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
            for metadata in (messaging_tables, order_tables, payment_tables, notification_tables):
                await tables.run_sync(metadata.create_all)
        await engine.dispose()
    return Databases(urls[0], urls[1], effective)


def _size(table: str) -> str:
    return f"""
        SELECT count(*), pg_total_relation_size('{table}'),
               (SELECT autovacuum_count FROM pg_stat_user_tables WHERE relid = '{table}'::regclass)
        FROM {table}
    """


@dataclass(frozen=True, slots=True)
class Sample:
    at: float
    rows: int
    bytes: int
    autovacuums: int
    extra: int | None = None
    """The outbox's unsent rows; the notifications' raw bodies still kept."""


@dataclass
class Arm:
    """One of the two databases: its relay, its cleanups and what was measured of it."""

    name: str
    database_url: str
    relay: Relay
    broker: MemoryBroker
    retention: Retention | None
    """The other tables' cleanup (the baseline has none)."""
    written: dict[str, int] = field(default_factory=lambda: dict.fromkeys(TABLES, 0))
    samples: dict[str, list[Sample]] = field(default_factory=lambda: {t: [] for t in TABLES})

    def metric(self, name: str, **labels: str) -> float:
        return self.relay.metrics.registry.get_sample_value(name, labels) or 0.0

    async def sample(self, connection: asyncpg.Connection, started: float) -> None:
        at = time.perf_counter() - started
        for table in TABLES:
            rows, size, autovacuums = await connection.fetchrow(_size(table))
            extra = None
            if table == "outbox":
                extra = await connection.fetchval(
                    "SELECT count(*) FROM outbox WHERE published_at IS NULL"
                )
            elif table == "payment_events":
                extra = await connection.fetchval(_KEPT_BODIES)
            self.samples[table].append(Sample(at, rows, size, autovacuums, extra))
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


async def write_outbox(arm: Arm, rate: float, seconds: float, started: float) -> None:
    """The checkout's own outbox writer, paced by :func:`pace`."""
    event = examples.examples()[OrderCreated]
    connection = await asyncpg.connect(asyncpg_dsn(arm.database_url))
    try:
        for i in range(int(rate * seconds / ROWS_A_STATEMENT)):
            await pace(i, rate, started)
            items = [
                OutboxItem(wrap(event, key=f"order-{(i * ROWS_A_STATEMENT + n) % 1000}"))
                for n in range(ROWS_A_STATEMENT)
            ]
            await add_on_connection(connection, *items)
            arm.written["outbox"] += ROWS_A_STATEMENT
    finally:
        await connection.close()


async def write_table(arm: Arm, table: str, rate: float, seconds: float, started: float) -> None:
    """Rows of ``table`` as its service writes them, paced by :func:`pace`."""
    statement, arguments = _WRITES[table]
    connection = await asyncpg.connect(asyncpg_dsn(arm.database_url))
    try:
        for i in range(int(rate * seconds / ROWS_A_STATEMENT)):
            await pace(i, rate, started)
            await connection.execute(statement, ROWS_A_STATEMENT, *arguments)
            arm.written[table] += ROWS_A_STATEMENT
    finally:
        await connection.close()


async def pace(i: int, rate: float, started: float) -> None:
    """Wait until statement ``i`` is due, at ``started + i * ROWS_A_STATEMENT / rate``; a
    late statement goes at once, so the rate holds on average."""
    await asyncio.sleep(max(0.0, started + i * ROWS_A_STATEMENT / rate - time.perf_counter()))


async def sample_until(arms: list[Arm], done: asyncio.Event, every: float, started: float) -> None:
    """A sample of each arm at ``started``, then every ``every`` s, and once ``done``."""
    connections = [await asyncpg.connect(asyncpg_dsn(a.database_url)) for a in arms]
    try:
        for k in itertools.count(1):
            for arm, connection in zip(arms, connections, strict=True):
                await arm.sample(connection, started)
            if done.is_set():
                return
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(done.wait(), started + k * every - time.perf_counter())
    finally:
        for connection in connections:
            await connection.close()


@dataclass(frozen=True, slots=True)
class Run:
    cleanup: Arm
    baseline: Arm
    old_rounds: list[OldRound]
    seconds: float
    """From the first statement to the last, of every writer."""
    machine_busy: float
    """Cores busy on average meanwhile (of CORES), everything on the machine counted."""


async def measure(databases: Databases, arguments: argparse.Namespace) -> Run:
    retention = arguments.retention
    cleanup_relay, cleanup_broker = relay_over_memory(
        databases.cleanup,
        RelaySettings(retention_seconds=retention, cleanup_interval=arguments.interval),
    )
    # The workers' job, over the same registry as the relay (as in a worker).
    cleaner = Retention(
        asyncpg_dsn(databases.cleanup),
        retained_tables(retention),
        settings=RetentionSettings(interval=arguments.interval),
        metrics=cleanup_relay.metrics,
        name="bench",
    )
    cleanup = Arm("cleanup", databases.cleanup, cleanup_relay, cleanup_broker, cleaner)
    baseline = Arm(
        "baseline",
        databases.baseline,
        *relay_over_memory(databases.baseline, RelaySettings(retention_seconds=KEEP_EVERYTHING)),
        retention=None,
    )
    arms = [cleanup, baseline]
    relaying = [asyncio.create_task(a.relay.run()) for a in arms]
    await wait_until(lambda: all(a.relay.is_leader for a in arms), what="the relays to lead")
    stopping = asyncio.Event()
    cleaning = asyncio.create_task(cleaner.run(stopping))
    old_rounds: list[OldRound] = []
    done = asyncio.Event()
    busy_before, total_before = machine_ticks()
    started = time.perf_counter()
    old = asyncio.create_task(old_cleanup(baseline.database_url, retention, started, old_rounds))
    sampling = asyncio.create_task(sample_until(arms, done, arguments.sample_every, started))
    seconds = arguments.seconds
    await asyncio.gather(
        *(write_outbox(a, arguments.rate, seconds, started) for a in arms),
        *(write_table(a, t, arguments.table_rate, seconds, started) for a in arms for t in _WRITES),
    )
    elapsed = time.perf_counter() - started
    busy, total = machine_ticks()
    due = int(arguments.seconds // OLD_CLEANUP_INTERVAL) + 1
    await wait_until(lambda: len(old_rounds) >= due, within=60, what="the old cleanup's round")
    done.set()
    await sampling
    old.cancel()
    await asyncio.wait([old])
    stopping.set()
    await cleaning
    for arm in arms:
        arm.relay.stop()
    await asyncio.gather(*relaying)
    machine = (busy - busy_before) / max(1, total - total_before) * CORES
    return Run(cleanup, baseline, old_rounds, elapsed, machine)


def relay_over_memory(database_url: str, settings: RelaySettings) -> tuple[Relay, MemoryBroker]:
    broker = MemoryBroker()
    return Relay(database_url, MemoryTransport(broker), settings=settings), broker


def report(run: Run, databases: Databases, arguments: argparse.Namespace) -> None:
    cleanup, baseline = run.cleanup, run.baseline
    print(
        f"every growing table, written for {arguments.seconds:g} s: the outbox at"
        f" {arguments.rate:,.0f} rows/s (relayed, memory transport), each other table at"
        f" {arguments.table_rate:,.0f} rows/s; retention {arguments.retention:g} s,"
        f" autovacuum_naptime {databases.autovacuum_naptime}"
    )
    print(
        f"  cleanup : the relay's (outbox) and the workers' Retention job (the rest), a round"
        f" every {arguments.interval:g} s, batches of {cleanup.relay.settings.cleanup_batch_size:,}"
    )
    print(
        f"  baseline: the outbox's old cleanup, at most {OLD_CLEANUP_LIMIT:,} rows"
        f" every {OLD_CLEANUP_INTERVAL:g} s (its rounds: "
        + ", ".join(f"t={r.at:.1f} s deleted {r.deleted:,}" for r in run.old_rounds)
        + "); the other tables, none"
    )
    print(
        f"  written in {run.seconds:.1f} s: "
        + ", ".join(
            f"{table} {cleanup.written[table]:,} + {baseline.written[table]:,}" for table in TABLES
        )
        + f" rows (cleanup + baseline); machine busy {run.machine_busy:.2f} of {CORES} cores"
    )
    for table in TABLES:
        print()
        print_series(table, cleanup.samples[table], baseline.samples[table])
    print()
    print_summary(run, arguments)


_EXTRA = {"outbox": "unsent", "payment_events": "bodies"}
"""The column each table prints beside its rows, if any."""


def print_series(table: str, ours: Sequence[Sample], theirs: Sequence[Sample]) -> None:
    extra = _EXTRA.get(table)
    heading = f"{'rows':>9} {extra or '':>7} {'MB':>7} {'vacuumed':>8}"
    width = len(heading)
    print(f"  {table}")
    print(f"  {'t (s)':>6} | {'cleanup':^{width}} | {'baseline':^{width}}")
    print(f"  {'':>6} | {heading} | {heading}")
    for mine, other in zip(ours, theirs, strict=True):
        print(f"  {mine.at:6.1f} | {columns(mine)} | {columns(other)}")


def columns(sample: Sample) -> str:
    extra = "" if sample.extra is None else f"{sample.extra:,}"
    return f"{sample.rows:9,} {extra:>7} {sample.bytes / 1e6:7.1f} {sample.autovacuums:8}"


def print_summary(run: Run, arguments: argparse.Namespace) -> None:
    cleanup, baseline = run.cleanup, run.baseline
    print(
        f"  {'table':<20} {'max rows':^21} {'max MB':^17} {'bound':>8}"
        f" {'deleted':>8} {'rounds':>6} {'busy s':>7} {'us/row':>7} {'of a core':>9}"
    )
    print(f"  {'':<20} {'cleanup':>10} {'baseline':>10} {'cleanup':>8} {'baseline':>8}")
    for table in TABLES:
        rate = arguments.rate if table == "outbox" else arguments.table_rate
        bound = rate * (arguments.retention + arguments.interval)
        rows = [max(bounded(table, s) for s in arm.samples[table]) for arm in (cleanup, baseline)]
        mb = [max(s.bytes for s in arm.samples[table]) / 1e6 for arm in (cleanup, baseline)]
        name = _CLEANUP_OF.get(table, table)
        deleted = cleanup.metric("messaging_retention_deleted_total", table=name)
        rounds = cleanup.metric("messaging_retention_rounds_total", table=name)
        busy = cleanup.metric("messaging_retention_busy_seconds_total", table=name)
        label = "payment_events bodies" if table == "payment_events" else table
        print(
            f"  {label:<20} {rows[0]:10,} {rows[1]:10,} {mb[0]:8.1f} {mb[1]:8.1f} {bound:8,.0f}"
            f" {deleted:8,.0f} {rounds:6,.0f} {busy:7.2f} {busy / max(1, deleted) * 1e6:7.1f}"
            f" {busy / run.seconds:9.3f}"
        )
    print(
        "  (max rows: of payment_events, the raw bodies kept; bound: rate x (retention +"
        " interval); busy s: the cleanup's statements, the pauses left out; of a core: busy s"
        " over the run)"
    )
    for arm in (cleanup, baseline):
        published = arm.metric("messaging_relay_published_total")
        print(
            f"  {arm.name:<8} : outbox published {published:,.0f},"
            f" most unsent at a sample {max(s.extra or 0 for s in arm.samples['outbox']):,}"
        )


def bounded(table: str, sample: Sample) -> int:
    """What the retention of ``table`` bounds: its rows, or, of the notifications (whose
    rows stay by design), the raw bodies they keep."""
    if table == "payment_events":
        return sample.extra or 0
    return sample.rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rate", type=float, default=2000.0, help="outbox rows/s written")
    parser.add_argument(
        "--table-rate", type=float, default=1000.0, help="rows/s written to each other table"
    )
    parser.add_argument("--seconds", type=float, default=60.0, help="how long they are written")
    parser.add_argument("--retention", type=float, default=5.0, help="seconds rows are kept")
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
